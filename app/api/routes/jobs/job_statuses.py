"""GET|POST /v1/jobs/statuses (Nomad 1.8's Job.Statuses, the web UI's job list): each job with
its allocations, the sum of its groups' counts, its latest deployment, or, for a periodic or
parameterized job, its children's statuses.

Newest change first (jobs by ModifyIndex, highest first; ?reverse=true oldest first), paged by
?per_page and ?next_token (a ModifyIndex, as Nomad's tokenizer makes it). Child jobs only with
?include_children=true. A POST body `{"Jobs": [{"ID", "Namespace"}], "IncludeChildren"}` asks for
those jobs only (their namespaces, not ?namespace=, decide)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from flask import Blueprint, Response, request
from sqlalchemy.orm import Session

from app.api.access.visibility import Visibility, list_visibility
from app.api.encoders.encode import nanos
from app.api.http.context import read, respond
from app.api.http.listing import with_token
from app.api.http.params import MAX_PER_PAGE, arg, bool_arg, integer_arg, namespace, optional_json_body
from app.models import Allocation, Deployment, Job
from app.store.job import job_reads as reads
from app.store.job import job_status_reads as status_reads
from app.values.constants import DEFAULT_NAMESPACE, DEPLOYMENT_ACTIVE_STATUSES
from app.values.errors import FieldProblem, InvalidInput
from app.wire.job_statuses import (
    JobStatusesAllocJson,
    JobStatusesJobJson,
    JobStatusesLatestDeploymentJson,
)
from app.wire.json import JsonObject

bp = Blueprint("job_statuses", __name__)
TABLES = ["jobs", "allocations", "deployments", "evaluations"]
Key = tuple[str, str]


@dataclass(frozen=True)
class StatusQuery:
    namespace: str | None  # None: every namespace
    wanted: frozenset[Key] | None  # the body's jobs; None: all
    include_children: bool
    per_page: int | None
    next_token: int | None
    reverse: bool
    visibility: Visibility


@bp.route("/jobs/statuses", methods=["GET", "POST"])
def statuses() -> Response:
    query = _query()

    def fetch(session: Session) -> tuple[list[JobStatusesJobJson], str | None]:
        jobs, token = _page(reads.list_jobs(session, query.namespace, None), query)
        return _encode(session, jobs, query.namespace), token

    (body, token), index = read(TABLES, fetch)
    return with_token(respond(body, index), token)


def _query() -> StatusQuery:
    has_body = request.method == "POST" and bool(request.get_data())
    body = optional_json_body() if has_body else {}
    ns = namespace(allow_wildcard=True)
    wanted = _wanted(body) if has_body else None  # a body must name jobs, as in Nomad
    if wanted is not None and arg("namespace") in (None, "", DEFAULT_NAMESPACE):
        ns = None  # the jobs name their own namespaces
    include = bool_arg("include_children") or body.get("IncludeChildren") is True
    token = arg("next_token")
    if token and not token.isdigit():
        raise InvalidInput.of("next_token", f"must be a job's ModifyIndex, got {token!r}")
    return StatusQuery(
        namespace=ns,
        wanted=wanted,
        include_children=include,
        per_page=len(wanted) if wanted else integer_arg("per_page", minimum=0, maximum=MAX_PER_PAGE) or None,
        next_token=int(token) if token else None,
        reverse=bool_arg("reverse"),
        visibility=list_visibility(),
    )


def _wanted(body: JsonObject) -> frozenset[Key]:
    jobs = body.get("Jobs")
    if not isinstance(jobs, list) or not jobs:
        raise InvalidInput.of("Jobs", "no jobs in request")
    keys: set[Key] = set()
    problems = []
    for i, job in enumerate(jobs):
        job_id = job.get("ID") if isinstance(job, dict) else None
        ns = (job.get("Namespace") or DEFAULT_NAMESPACE) if isinstance(job, dict) else None
        if not isinstance(job_id, str) or not job_id or not isinstance(ns, str):
            problems.append(FieldProblem(f"Jobs[{i}]", "must be an object with a string ID and Namespace"))
            continue
        keys.add((ns, job_id))
    if problems:
        raise InvalidInput(problems)
    include = body.get("IncludeChildren", False)
    if not isinstance(include, bool):
        raise InvalidInput.of("IncludeChildren", "must be a boolean")
    return frozenset(keys)


def _page(jobs: Sequence[Job], query: StatusQuery) -> tuple[list[Job], str | None]:
    """Nomad's paginator over JobsByModifyIndex, newest first unless ?reverse."""
    chosen = [
        job
        for job in jobs
        if query.visibility.allows(job.namespace)
        and (query.include_children or job.parent_id is None)
        and (query.wanted is None or (job.namespace, job.id) in query.wanted)
    ]
    newest_first = not query.reverse
    chosen.sort(key=lambda j: (j.modify_index, j.namespace, j.id), reverse=newest_first)
    if query.next_token is not None:
        token = query.next_token
        chosen = [j for j in chosen if (j.modify_index <= token if newest_first else j.modify_index >= token)]
    if query.per_page and len(chosen) > query.per_page:
        return chosen[: query.per_page], str(chosen[query.per_page].modify_index)
    return chosen, None


def _encode(session: Session, jobs: list[Job], ns: str | None) -> list[JobStatusesJobJson]:
    keys = [(j.namespace, j.id) for j in jobs]
    parents = [(j.namespace, j.id) for j in jobs if j.periodic or j.parameterized]
    allocs = status_reads.allocations_by_job(session, [k for k in keys if k not in parents])
    deployments = status_reads.latest_deployments(session, keys)
    kids = status_reads.children(session, parents)
    statuses = reads.derived_statuses(session, ns)
    out = []
    for job in jobs:
        key = (job.namespace, job.id)
        groups = job.spec.get("TaskGroups") or []
        out.append(
            JobStatusesJobJson(
                ID=job.id,
                Namespace=job.namespace,
                Name=job.name,
                Type=job.type,
                NodePool=job.node_pool,
                Datacenters=list(job.datacenters) or None,
                Priority=job.priority,
                Version=job.version,
                SubmitTime=nanos(job.submit_time),
                ModifyIndex=job.modify_index,
                Allocs=[_alloc(a) for a in allocs.get(key, [])] or None,
                GroupCountSum=sum(int(g.get("Count") or 0) for g in groups),
                ChildStatuses=[statuses.get((c.namespace, c.id), c.status) for c in kids.get(key, [])]
                if key in parents
                else None,
                ParentID=job.parent_id or "",
                LatestDeployment=_deployment(deployments.get(key)) if key not in parents else None,
                Stop=job.stop,
                IsPack="pack.name" in (job.spec.get("Meta") or {}),
                Status=statuses.get(key, job.status),
            )
        )
    return out


def _alloc(a: Allocation) -> JobStatusesAllocJson:
    health = a.deployment_status or {}
    healthy = health.get("Healthy")
    return {
        "ID": str(a.id),
        "Group": a.task_group,
        "ClientStatus": a.client_status,
        "NodeID": str(a.node_id),
        "DeploymentStatus": {
            "Canary": bool(health.get("Canary")),
            "Healthy": healthy if isinstance(healthy, bool) else None,
        },
        "JobVersion": a.job_version,
        "FollowupEvalID": "" if a.followup_eval_id is None else str(a.followup_eval_id),
        "HasPausedTask": False,  # pausing tasks is Nomad Enterprise
    }


def _deployment(d: Deployment | None) -> JobStatusesLatestDeploymentJson | None:
    if d is None:
        return None
    groups = [g for g in d.task_groups.values() if isinstance(g, dict)]
    canaried = [g for g in groups if int(g.get("DesiredCanaries") or 0) > 0]
    return {
        "ID": str(d.id),
        "IsActive": d.status in DEPLOYMENT_ACTIVE_STATUSES,
        "JobVersion": d.job_version,
        "Status": d.status,
        "StatusDescription": d.status_description,
        # Nomad's HasAutoPromote and RequiresPromotion, over the groups that have canaries.
        "AllAutoPromote": bool(groups) and all(g.get("AutoPromote") for g in canaried),
        "RequiresPromotion": d.status == "running" and any(not g.get("Promoted") for g in canaried),
    }
