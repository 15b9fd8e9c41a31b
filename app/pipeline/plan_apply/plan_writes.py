"""The writes of a batch of checked plans, in few statements on the applier's raw psycopg
connection: the deployments (plan_deployments), one UPDATE for every stop and eviction, one COPY
for every new allocation, one UPDATE for the replacement links. Preemption follow-ups and
unblocks are rare and go through the store's functions on the same transaction."""

from __future__ import annotations

import json
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import psycopg
from sqlalchemy.orm import Session

from app.pipeline.codecs.metrics_codec import placed_text
from app.pipeline.codecs.plan_codec import ports_to_json, task_cores_to_json
from app.pipeline.plan_apply import plan_deployments
from app.pipeline.plan_apply.plan_check import Placement, Verdict
from app.store.evaluation.blocked_evals import unblock_capacity
from app.store.evaluation.evals import EvalRequest, insert_eval
from app.store.sql import psycopg_query, query
from app.structs import Allocation, AllocationStop, AnyMetrics, Plan, Port, TaskCores


@dataclass(frozen=True)
class Checked:
    """One plan of the batch with its verdict, and the COPY rows of its fresh placements when they
    were encoded ahead of the write (the pipelined applier encodes them while the previous batch
    commits; `copy_row`, without the columns only the writing transaction knows)."""

    plan: Plan
    verdict: Verdict
    rows: Mapping[uuid.UUID, str] = field(default_factory=dict)
    result: str = ""  # the verdict's result_columns, when encoded ahead of the write


def frees(verdict: Verdict, in_db: Collection[uuid.UUID]) -> bool:
    """Whether the verdict frees room on a node: a stop, an eviction, or an in-place update
    (which may shrink)."""
    if verdict.stops or verdict.preemptions:
        return True
    return any(p.alloc_id in in_db for placed in verdict.accepted.values() for p in placed)


def encoded(item: Checked, known: Known) -> Checked:
    """`item` with the COPY rows of every accepted placement that is not an in-place update, and
    its verdict's result columns."""
    in_db, text = known.in_db, known.text_metrics
    rows = {
        p.alloc_id: copy_row(p, text)
        for placed in item.verdict.accepted.values()
        for p in placed
        if p.alloc_id not in in_db
    }
    return Checked(item.plan, item.verdict, rows, result_columns(item.verdict))


def raw(session: Session) -> psycopg.Connection[Any]:
    """The session's psycopg connection: same transaction, none of the ORM's per-statement cost."""
    pg = session.connection().connection.driver_connection
    assert isinstance(pg, psycopg.Connection)
    return pg


@dataclass(frozen=True)
class Known:
    """What the batch's writes build on, as read with the batch: the allocation IDs that
    already exist (in-place updates), each node's computed class (for unblocking), and the
    stored deployments the plans name."""

    in_db: set[uuid.UUID]
    classes: dict[uuid.UUID, str]
    deployments: dict[uuid.UUID, plan_deployments.Stored]
    # The placements' metrics go to allocations.placement_metrics (revision 0037), else to the
    # jsonb allocations.metrics (the schema before it: app.pipeline.metrics_columns).
    text_metrics: bool = True


def write_batch(session: Session, batch: Sequence[Checked], index: int, known: Known) -> plan_deployments.Outcome:
    """Write every accepted part of `batch` (and every plan's deployment changes); returns the
    deployments as the batch leaves them, for writes after it to build on."""
    pg, now, in_db = raw(session), datetime.now(UTC), known.in_db
    # The deployments first: the new allocations reference them.
    outcome = plan_deployments.fold((item.plan for item in batch), known.deployments)
    plan_deployments.write(pg, outcome, index)
    stops = [s for item in batch for items in item.verdict.stops.values() for s in items]
    evictions = [s for item in batch for items in item.verdict.preemptions.values() for s in items]
    _stop(pg, [*stops, *evictions], index)
    accepted = [p for item in batch for allocs in item.verdict.accepted.values() for p in allocs]
    in_place = [p for p in accepted if p.alloc_id in in_db]
    if in_place:
        pg.cursor().executemany(psycopg_query("plan_update_in_place"), [_in_place_row(p, index) for p in in_place])
    fresh = [p for p in accepted if p.alloc_id not in in_db]
    rows = {alloc_id: row for item in batch for alloc_id, row in item.rows.items()}
    text = known.text_metrics
    copy_allocations(pg, [rows.get(p.alloc_id) or copy_row(p, text) for p in fresh], index, now, text)
    _claim_volumes(session, [p.alloc for p in fresh if p.alloc.claims], index)
    links = [p for p in fresh if p.alloc.previous_allocation]
    if links:
        pg.execute(
            psycopg_query("plan_link_previous"),
            {"previous": [p.alloc.previous_allocation for p in links], "next": [p.alloc_id for p in links]},
            prepare=True,
        )
    for item in batch:
        victims = [s for items in item.verdict.preemptions.values() for s in items]
        if victims:
            _record_preemptions(session, victims, index)
    # Evictions are not freed capacity: their room went to the preemptor.
    freed = {n for item in batch for n, items in item.verdict.stops.items() if items}
    unblock_capacity(session, {n: known.classes[n] for n in freed if n in known.classes}, index)
    return outcome


def _claim_volumes(session: Session, allocs: list[Allocation], index: int) -> None:
    """Sticky volume claims of the batch's new allocations, written with them (Nomad's
    updateStickyVolumeClaimsFromAlloc): a group's claim on a volume it already holds moves to
    the new allocation."""
    rows = [(a, c) for a in allocs for c in a.claims]
    if not rows:
        return
    raw(session).execute(
        psycopg_query("plan_claim_volumes"),
        {
            "ids": [uuid.uuid4() for _ in rows],
            "namespaces": [a.namespace for a, _ in rows],
            "job_ids": [a.job_id for a, _ in rows],
            "groups": [a.task_group for a, _ in rows],
            "allocs": [a.id for a, _ in rows],
            "volumes": [c.volume_id for _, c in rows],
            "names": [c.name for _, c in rows],
            "index": index,
        },
    )


def _stop(pg: psycopg.Connection[Any], stops: list[AllocationStop], index: int) -> None:
    if not stops:
        return
    pg.execute(
        psycopg_query("plan_stop_allocs"),
        {
            "index": index,
            "ids": [s.alloc_id for s in stops],
            "desired": [s.desired_status for s in stops],
            "descriptions": [s.description for s in stops],
            "client": [s.client_status for s in stops],
        },
        prepare=True,
    )


def _in_place_row(placed: Placement, index: int) -> dict[str, object]:
    alloc, resources = placed.alloc, placed.resources
    return {
        "id": alloc.id,
        "job_version": alloc.job_version,
        "eval_id": alloc.eval_id,
        "cpu": resources.cpu,
        "memory_mb": resources.memory_mb,
        "memory_max_mb": resources.memory_max_mb,
        "disk_mb": resources.disk_mb,
        "index": index,
        "deployment_id": alloc.deployment_id,
    }


def _record_preemptions(session: Session, evictions: list[AllocationStop], index: int) -> None:
    """Link each victim to its preemptor, and give every job that lost work one `preemption`
    evaluation in this same transaction, so the evicted work is placed again (or waits as a
    blocked evaluation until capacity returns)."""
    linked = [s for s in evictions if s.preempted_by is not None]
    if linked:
        session.execute(
            query("mark_preempted_by"),
            {"victims": [s.alloc_id for s in linked], "bys": [s.preempted_by for s in linked]},
        )
    jobs = session.execute(query("preempted_jobs"), {"ids": [s.alloc_id for s in evictions]}).mappings()
    for job in jobs:
        insert_eval(
            session,
            EvalRequest(
                namespace=job["namespace"],
                job_id=job["id"],
                job_type=job["type"],
                priority=job["priority"],
                triggered_by="preemption",
                job_modify_index=job["job_modify_index"],
            ),
            index,
        )


# The metrics' column is placement_metrics (revision 0037), or metrics on the schema before it.
COPY_COLUMNS = (
    "id",
    "namespace",
    "job_id",
    "job_version",
    "eval_id",
    "node_id",
    "node_name",
    "task_group",
    "name",
    "desired_status",
    "client_status",
    "cpu",
    "memory_mb",
    "memory_max_mb",
    "disk_mb",
    "host_ports",
    "reserved_cores",
    "allocated_resources",
    "previous_allocation",
    "preempted_allocations",
    "reschedule_tracker",
    "deployment_id",
    "deployment_status",
    "placement_metrics",
    "create_index",
    "modify_index",
    "alloc_modify_index",
    "create_time",
    "modify_time",
)

COPY_COLUMNS_BEFORE_0037 = tuple("metrics" if c == "placement_metrics" else c for c in COPY_COLUMNS)

# COPY's text format: a backslash, a tab (the delimiter), a newline or a carriage return inside a
# value is written as a backslash escape; NULL is \N.
_COPY_TEXT = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})
_NULL = "\\N"


def _text(value: str) -> str:
    """`value` in COPY's text form. Most values have nothing to escape: four scans of the string
    cost less than translate, which looks each character up in the map (about 4 µs for a
    placement's metrics text of 260 characters, once per allocation)."""
    if "\\" in value or "\t" in value or "\n" in value or "\r" in value:
        return value.translate(_COPY_TEXT)
    return value


def _optional(value: object | None) -> str:
    """Any value as text, None as NULL (which a NOT NULL column refuses as a constraint
    violation: the plan is refused, as psycopg's own row writer would have it)."""
    return _NULL if value is None else _text(str(value))


def _array(values: Iterable[object]) -> str:
    """An array column in COPY's text form. Only integers and UUIDs go here, which need no quoting."""
    return "{" + ",".join(str(v) for v in values) + "}"


def copy_allocations(
    pg: psycopg.Connection[Any], rows: list[str], index: int, now: datetime, text_metrics: bool = True
) -> None:
    """COPY, not INSERT: a batch (or one big plan) can place tens of thousands of allocations in
    one commit. The statement trigger on allocations still checks the whole batch against node
    capacity. Each row comes encoded (copy_row) but for its last columns, the same for the whole
    batch: the index and the time, known only to the writing transaction."""
    if not rows:
        return
    stamp = now.isoformat()
    tail = f"\t{index}\t{index}\t{index}\t{stamp}\t{stamp}\n"
    columns = COPY_COLUMNS if text_metrics else COPY_COLUMNS_BEFORE_0037
    with pg.cursor().copy(f"COPY allocations ({', '.join(columns)}) FROM STDIN") as copy:
        copy.write(tail.join(rows) + tail)


RESULT_COLUMNS = (
    "node_update",
    "node_allocation",
    "node_preemptions",
    "rejected_nodes",
    "plan_id",
    "applier_term",
    "refresh_index",
    "alloc_index",
    "completed_eval",
)


def result_columns(verdict: Verdict) -> str:
    """A verdict's plan_results columns in COPY's text format, up to (not including) the plan's
    id and what only the writing transaction knows: its term, index and which evaluations it
    completed. The IDs are the verdict's, as plan_codec.decode_result reads them back; they are
    UUIDs, so the JSON is written directly (no quoting or escaping needed)."""
    return "\t".join(
        (
            _ids_by_node({n: [s.alloc_id for s in items] for n, items in verdict.stops.items()}),
            _ids_by_node({n: [p.alloc_id for p in items] for n, items in verdict.accepted.items()}),
            _ids_by_node({n: [s.alloc_id for s in items] for n, items in verdict.preemptions.items()}),
            _array(verdict.rejected),
        )
    )


def _ids_by_node(ids: Mapping[uuid.UUID, Iterable[uuid.UUID]]) -> str:
    """{"node": ["id", ...], ...} as JSON text."""
    return "{" + ", ".join(f'"{n}": [' + ", ".join(f'"{i}"' for i in items) + "]" for n, items in ids.items()) + "}"


def _uuid(value: uuid.UUID | None) -> str:
    """A UUID needs no escaping (hex digits and dashes): about a third of _optional's time."""
    return _NULL if value is None else str(value)


def _shared_resources(disk_mb: int, ports: tuple[Port, ...], task_cores: tuple[TaskCores, ...] = ()) -> str:
    """The allocated_resources column. Most placements have no ports nor cores: their JSON is
    written directly, at a tenth of json.dumps's time."""
    if not ports and not task_cores and type(disk_mb) is int:
        return f'{{"Shared": {{"DiskMB": {disk_mb}, "Ports": []}}}}'
    allocated: dict[str, object] = {"Shared": {"DiskMB": disk_mb, "Ports": ports_to_json(ports)}}
    if task_cores:
        allocated["Tasks"] = task_cores_to_json(task_cores)
    return _text(json.dumps(allocated))


def copy_row(placed: Placement, text_metrics: bool = True) -> str:
    """A new allocation's COPY row in text format, up to (not including) its index and time
    columns. Written by hand rather than by psycopg's row writer: the pipelined applier encodes a
    batch's rows while the previous batch commits, outside any COPY, and a str.join of
    ready-made text is about half psycopg's per-value formatting time. Text that may hold a
    special character is escaped; UUIDs and the check's own integers cannot hold one."""
    a, resources = placed.alloc, placed.resources
    return "\t".join(
        (
            _uuid(a.id),
            _optional(a.namespace),
            _optional(a.job_id),
            _optional(a.job_version),
            _uuid(a.eval_id),
            _uuid(a.node_id),
            _optional(a.node_name),
            _optional(a.task_group),
            _optional(a.name),
            "run",
            "pending",
            _optional(resources.cpu),
            _optional(resources.memory_mb),
            _optional(resources.memory_max_mb),
            _optional(resources.disk_mb),
            _array(placed.ports),
            _array(placed.cores),
            _shared_resources(resources.disk_mb, a.ports, a.task_cores),
            _uuid(a.previous_allocation),
            _array(a.preempted_allocations),
            _text(json.dumps(dict(a.reschedule_tracker))) if a.reschedule_tracker else _NULL,
            _uuid(a.deployment_id),
            '{"Canary": true}' if a.canary else _NULL,
            _metrics(a.metrics, text_metrics),
        )
    )


def _metrics(m: AnyMetrics | None, text_metrics: bool) -> str:
    """The placement_metrics column: the plan's compact text (metrics_codec.placed_text); NULL: not
    recorded (the jsonb `metrics` keeps its default). On the schema before revision 0037, the
    same text into the jsonb `metrics`, '{}' when not recorded."""
    if m is None:
        return _NULL if text_metrics else "{}"
    return _text(placed_text(m))
