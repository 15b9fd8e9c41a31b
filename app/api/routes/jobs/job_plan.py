"""POST /v1/job/:id/plan: a scheduler dry run in Nomad's JobPlanResponse shape."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TypedDict

from flask import Blueprint, Response

from app.api.http.context import respond, state
from app.api.http.params import json_body
from app.api.routes.jobs.jobs import normalized_job
from app.jobspec.canonical import canonical_job
from app.jobspec.diff import job_diff
from app.jobspec.warnings import format_warnings, job_warnings
from app.pipeline.codecs.metrics_codec import metrics_to_json
from app.pipeline.job_plan import DryRun, dry_run
from app.scheduler.annotate import DesiredUpdates
from app.store.job import jobs as job_store
from app.structs import Allocation
from app.values.errors import InvalidInput
from app.wire.allocation import AllocationMetricJson
from app.wire.job import JobDiffJson, JobSpec

bp = Blueprint("job_plan", __name__)

# Nomad's update types (scheduler/annotate.go), as a group diff's Updates names its counts.
UPDATE_TYPES = (
    ("ignore", "ignore"),
    ("place", "create"),
    ("stop", "destroy"),
    ("migrate", "migrate"),
    ("canary", "canary"),
    ("in_place_update", "in-place update"),
    ("destructive_update", "create/destroy update"),
)


class DesiredUpdatesJson(TypedDict):
    Ignore: int
    Place: int
    Migrate: int
    Stop: int
    InPlaceUpdate: int
    DestructiveUpdate: int
    Canary: int
    Preemptions: int


class AllocStubJson(TypedDict):
    """Nomad's AllocListStub, as far as the scheduler's view of the allocation goes."""

    ID: str
    EvalID: str
    Name: str
    Namespace: str
    NodeID: str
    NodeName: str
    JobID: str
    JobVersion: int
    TaskGroup: str
    DesiredStatus: str
    ClientStatus: str
    CreateIndex: int
    ModifyIndex: int


class PlanAnnotationsJson(TypedDict):
    DesiredTGUpdates: dict[str, DesiredUpdatesJson]
    PreemptedAllocs: list[AllocStubJson] | None


class JobPlanResponseJson(TypedDict):
    """Nomad's JobPlanResponse."""

    Annotations: PlanAnnotationsJson
    FailedTGAllocs: dict[str, AllocationMetricJson] | None
    JobModifyIndex: int
    CreatedEvals: None
    Diff: Mapping[str, object] | None  # app.jobspec.diff's JobDiff
    NextPeriodicLaunch: None
    Warnings: str
    Index: int


@bp.route("/job/<path:job_id>/plan", methods=["PUT", "POST"])
def plan(job_id: str) -> Response:
    body = json_body()
    spec = normalized_job(body)
    if spec["ID"] != job_id:
        raise InvalidInput.of("Job.ID", f"{spec['ID']!r} does not match the job ID in the URL ({job_id!r})")
    want_diff = body.get("Diff", False)
    if not isinstance(want_diff, bool):
        raise InvalidInput.of("Diff", "must be a boolean")
    with state().reads() as session, session.begin():
        job_store.check_references(session, spec)
    dry = dry_run(state().engine, spec, time.time_ns())
    return respond(plan_response(dry, spec, diff=want_diff), dry.snapshot.index)


def _diff(current: JobSpec | None, spec: JobSpec) -> JobDiffJson:
    """Between the jobs as Nomad sends them, as registration compares them: a job read back
    and planned again (its zero values spelt out) is no change. Contextual, as Nomad's
    Job.Plan always diffs: an edited block lists its unchanged fields too."""
    return job_diff(None if current is None else canonical_job(current), canonical_job(spec), contextual=True)


def plan_response(dry: DryRun, spec: JobSpec, *, diff: bool) -> JobPlanResponseJson:
    failed = dry.result.failed_tg_allocs
    return {
        "Annotations": {
            "DesiredTGUpdates": {group: _updates(u) for group, u in sorted(dry.updates.items())},
            "PreemptedAllocs": [_stub(a) for a in dry.preempted] or None,
        },
        "FailedTGAllocs": {group: metrics_to_json(m) for group, m in failed.items()} or None,
        "JobModifyIndex": dry.job_modify_index,
        "CreatedEvals": None,
        "Diff": _annotated(_diff(dry.current_spec, spec), dry.updates) if diff else None,
        "NextPeriodicLaunch": None,
        "Warnings": format_warnings(job_warnings(spec)),
        "Index": dry.snapshot.index,
    }


def _annotated(diff: JobDiffJson, updates: Mapping[str, DesiredUpdates]) -> JobDiffJson:
    """Nomad's plan annotation: each group diff's Updates, the non-zero counts of the group's
    DesiredTGUpdates under their update type (the CLI prints them on the group's line)."""
    for group in diff["TaskGroups"] or []:
        found = updates.get(group["Name"])
        if found is not None:
            counts = ((word, int(getattr(found, attr))) for attr, word in UPDATE_TYPES)
            group["Updates"] = {word: count for word, count in counts if count}
    return diff


def _updates(u: DesiredUpdates) -> DesiredUpdatesJson:
    return {
        "Ignore": u.ignore,
        "Place": u.place,
        "Migrate": u.migrate,
        "Stop": u.stop,
        "InPlaceUpdate": u.in_place_update,
        "DestructiveUpdate": u.destructive_update,
        "Canary": u.canary,
        "Preemptions": u.preemptions,
    }


def _stub(a: Allocation) -> AllocStubJson:
    return {
        "ID": str(a.id),
        "EvalID": str(a.eval_id),
        "Name": a.name,
        "Namespace": a.namespace,
        "NodeID": str(a.node_id),
        "NodeName": a.node_name,
        "JobID": a.job_id,
        "JobVersion": a.job_version,
        "TaskGroup": a.task_group,
        "DesiredStatus": a.desired_status,
        "ClientStatus": a.client_status,
        "CreateIndex": a.create_index,
        "ModifyIndex": a.modify_index,
    }
