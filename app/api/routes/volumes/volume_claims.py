"""Nomad 1.10's task group host volume claims (sticky volumes): the list
(GET /v1/volumes/claims) and delete (DELETE /v1/volumes/claim/:id), after which the group may
be placed with another volume and the volume may be deleted."""

from __future__ import annotations

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.http.context import read, respond, write
from app.api.http.listing import Entry, Order, as_is, list_query, page, with_token
from app.api.http.params import arg, namespace, prefix_arg, uuid_value
from app.models import HostVolumeClaim
from app.store import host_volume_claims as store
from app.wire.api.api_host_volumes import TaskGroupHostVolumeClaimJson

bp = Blueprint("volume_claims", __name__)


def claim_json(claim: HostVolumeClaim) -> TaskGroupHostVolumeClaimJson:
    return TaskGroupHostVolumeClaimJson(
        ID=str(claim.id),
        Namespace=claim.namespace,
        JobID=claim.job_id,
        TaskGroupName=claim.task_group,
        AllocID=str(claim.alloc_id),
        VolumeID=str(claim.volume_id),
        VolumeName=claim.volume_name,
        CreateIndex=claim.create_index,
        ModifyIndex=claim.modify_index,
    )


@bp.get("/volumes/claims")
def list_claims() -> Response:
    """Nomad's TaskGroupVolumeClaimListRequest: job_id, task_group, volume_name and prefix (of
    the claim ID) filters, filter= and paging (by namespace and ID), in the caller's namespace
    or every one it may read (`*`)."""
    wanted = store.ClaimFilter(
        namespace=namespace(allow_wildcard=True),
        job_id=arg("job_id") or "",
        task_group=arg("task_group") or "",
        volume_name=arg("volume_name") or "",
        prefix=prefix_arg() or "",
    )
    query = list_query()

    def fetch(session: Session) -> tuple[list[TaskGroupHostVolumeClaimJson], str | None]:
        entries = []
        for claim in store.list_claims(session, wanted):
            body = claim_json(claim)
            entries.append(Entry(claim.namespace, str(claim.id), claim.create_index, as_is(body), body))
        return page(entries, Order.NAMESPACE_ID, query)

    (rows, token), index = read(store.TABLES, fetch)
    return with_token(respond(rows, index), token)


@bp.delete("/volumes/claim/<claim_id>")
def delete_claim(claim_id: str) -> Response:
    key, ns = uuid_value(claim_id, "ClaimID"), namespace(allow_wildcard=False) or "default"
    index = write(lambda s: store.delete_claim(s, ns, key))
    return respond(None, index)
