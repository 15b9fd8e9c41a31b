"""`job plan`: run the scheduler on a proposed job against one read-only snapshot. Nothing is
written: the transaction is READ ONLY, so a dry run cannot leave a trace even by mistake."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import Engine

from app.pipeline.snapshot import read_snapshot
from app.scheduler import process
from app.scheduler.annotate import DesiredUpdates, desired_updates
from app.store.job.jobs import without_server_fields
from app.store.sql import query
from app.structs import Allocation, Evaluation, Job, SchedulerResult, Snapshot
from app.wire.job import JobSpec


@dataclass(frozen=True)
class DryRun:
    snapshot: Snapshot
    result: SchedulerResult
    updates: dict[str, DesiredUpdates]
    current_spec: JobSpec | None  # the registered job's specification, if there is one
    job_modify_index: int  # of the registered job: what `job run -check-index` must quote
    preempted: tuple[Allocation, ...]

    @property
    def changes(self) -> bool:
        return any(u.changes for u in self.updates.values())


def dry_run(engine: Engine, spec: JobSpec, now_ns: int) -> DryRun:
    spec = without_server_fields(spec)
    readonly = engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
    with readonly.connect() as conn, conn.begin():
        row = conn.execute(query("snapshot_job"), {"namespace": spec["Namespace"], "job_id": spec["ID"]}).mappings()
        current = row.first()
        live = current if current is not None and current["purged_at"] is None else None
        unchanged = live is not None and live["spec"] == spec
        version = int(current["version"]) + (0 if unchanged else 1) if current is not None else 0
        job_modify_index = int(live["job_modify_index"]) if live is not None else 0
        candidate = Job.from_spec(spec, version=version, job_modify_index=job_modify_index)
        evaluation = Evaluation(
            id=uuid.uuid4(),
            namespace=candidate.namespace,
            job_id=candidate.id,
            type=candidate.type,
            priority=candidate.priority,
            triggered_by="job-register",
            job_modify_index=job_modify_index,
            annotate_plan=True,
        )
        snapshot = read_snapshot(conn, evaluation, candidate=candidate)
    # A periodic or parameterized parent places nothing: the scheduler treats it as a launcher.
    result = process(evaluation, snapshot, now_ns=now_ns)
    return DryRun(
        snapshot=snapshot,
        result=result,
        updates=desired_updates(snapshot, result),
        current_spec=_spec(live["spec"]) if live is not None else None,
        job_modify_index=job_modify_index,
        preempted=_victims(snapshot, result),
    )


def _victims(snapshot: Snapshot, result: SchedulerResult) -> tuple[Allocation, ...]:
    running = {r.alloc.id: r.alloc for items in snapshot.preemptible.values() for r in items}
    evicted = [s.alloc_id for items in result.plan.node_preemptions.values() for s in items]
    return tuple(running[a] for a in evicted if a in running)


def _spec(stored: JobSpec) -> JobSpec:
    """The registered job's specification as read from its row (a copy the caller may keep)."""
    return stored.copy()
