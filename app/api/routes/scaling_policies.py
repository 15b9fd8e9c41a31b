"""GET /v1/scaling/policies and /v1/scaling/policy/:id (Nomad's Scaling.ListPolicies and
GetPolicy), read from the `scaling` blocks of the jobs' current versions: what the Nomad
Autoscaler polls.

Nomad stores each policy with a random ID made when the job first registers it. corral keeps
none: a policy's ID is a UUID derived from its namespace, job, group and type, so it stays the
same across versions (as Nomad's does) and names the same policy on every server. CreateIndex
is the job's, ModifyIndex the current version's. A stopped job's policies are disabled, as
Nomad disables them."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TypedDict

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.api.access.visibility import list_visibility
from app.api.http.context import read, respond
from app.api.http.params import arg, namespace, path_value
from app.models import Job
from app.store.job import job_reads as reads
from app.values.errors import NotFound
from app.wire.job import ScalingPolicySpec
from app.wire.json import JsonValue

bp = Blueprint("scaling_policies", __name__)
POLICY_NAMESPACE = uuid.UUID("6f1c3a52-8d0e-4d59-9a57-0c2b1c3e7a10")  # fixed: IDs must not change


class ScalingPolicyJson(TypedDict):
    ID: str
    Type: str
    Target: dict[str, str]
    Policy: JsonValue
    Min: int
    Max: int
    Enabled: bool
    CreateIndex: int
    ModifyIndex: int


class ScalingPolicyStubJson(TypedDict):
    ID: str
    Enabled: bool
    Type: str
    Target: dict[str, str]
    CreateIndex: int
    ModifyIndex: int


def policy_id(ns: str, job_id: str, group: str, kind: str) -> str:
    return str(uuid.uuid5(POLICY_NAMESPACE, "\x00".join((ns, job_id, group, kind))))


def policies(jobs: Sequence[Job]) -> list[ScalingPolicyJson]:
    out = []
    for job in jobs:
        for group in job.spec.get("TaskGroups") or []:
            scaling = group.get("Scaling")
            if isinstance(scaling, dict):
                out.append(_policy(job, str(group.get("Name", "")), scaling))
    return sorted(out, key=lambda p: p["ID"])


def _policy(job: Job, group: str, scaling: ScalingPolicySpec) -> ScalingPolicyJson:
    kind = str(scaling.get("Type") or "horizontal")
    low, high = scaling.get("Min"), scaling.get("Max")
    return {
        "ID": policy_id(job.namespace, job.id, group, kind),
        "Type": kind,
        "Target": {"Namespace": job.namespace, "Job": job.id, "Group": group},
        "Policy": scaling.get("Policy"),
        "Min": low if isinstance(low, int) else 0,
        "Max": high if isinstance(high, int) else 0,
        "Enabled": scaling.get("Enabled") is not False and not job.stop,
        "CreateIndex": job.create_index,
        "ModifyIndex": job.job_modify_index,
    }


def _stub(p: ScalingPolicyJson) -> ScalingPolicyStubJson:
    return {
        "ID": p["ID"],
        "Enabled": p["Enabled"],
        "Type": p["Type"],
        "Target": p["Target"],
        "CreateIndex": p["CreateIndex"],
        "ModifyIndex": p["ModifyIndex"],
    }


@bp.get("/scaling/policies")
def list_policies() -> Response:
    """?namespace= ('*' for all), ?job= (a job ID) and ?type= (a type prefix), as Nomad's."""
    ns, job_id, kind = namespace(allow_wildcard=True), arg("job") or None, arg("type") or ""
    visibility = list_visibility()

    def fetch(session: Session) -> list[ScalingPolicyStubJson]:
        jobs = [
            j
            for j in reads.list_jobs(session, ns, None)
            if visibility.allows(j.namespace) and (job_id is None or j.id == job_id)
        ]
        return [_stub(p) for p in policies(jobs) if p["Type"].startswith(kind)]

    body, index = read(["jobs"], fetch)
    return respond(body, index)


@bp.get("/scaling/policy/<policy>")
def get_policy(policy: str) -> Response:
    ns = namespace(allow_wildcard=False)
    wanted = path_value(policy, "ID")

    def fetch(session: Session) -> ScalingPolicyJson:
        for found in policies(reads.list_jobs(session, ns, None)):
            if found["ID"] == wanted:
                return found
        raise NotFound.of("ID", f"policy {wanted!r} not found in namespace {ns!r}")

    body, index = read(["jobs"], fetch)
    return respond(body, index)
