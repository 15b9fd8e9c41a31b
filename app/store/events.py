"""The event outbox: pages of committed events up to a safe index, with each event's row
rebuilt from its snapshot (typed, as the API's encoders read rows), and the retention GC."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from app.models import Allocation, Deployment, Evaluation, Job, Node, ServiceRegistration, Variable
from app.store.sql import query

# Topic -> the model whose table the snapshot is a row of (sql/queries/events.sql: event_rows_<Topic>).
MODELS: dict[
    str,
    type[Job]
    | type[Evaluation]
    | type[Allocation]
    | type[Deployment]
    | type[Node]
    | type[ServiceRegistration]
    | type[Variable],
] = {
    "Job": Job,
    "Evaluation": Evaluation,
    "Allocation": Allocation,
    "Deployment": Deployment,
    "Node": Node,
    "Service": ServiceRegistration,
    "Variable": Variable,  # metadata only: the snapshot holds no sealed items
}
TOPICS = tuple(MODELS)
# The state index names whose changes may add events: what the stream waits on.
TABLES = ["jobs", "evaluations", "allocations", "deployments", "nodes", "service_registrations", "variables"]


@dataclass
class StoredEvent:
    id: int
    index: int
    topic: str
    type: str
    key: str
    namespace: str
    filter_keys: list[str] | None
    row: Any = None  # the model instance rebuilt from the snapshot (transient, never flushed)
    extra: dict[str, str] = field(default_factory=dict)  # what rendering needs beyond the row


@dataclass(frozen=True)
class Page:
    events: list[StoredEvent]
    upto: int  # every event at or below this index has been read


def page_after(session: Session, after: int, safe: int, size: int) -> Page:
    """The events after index `after` up to `safe`, at least `size` of them when there are as
    many, ending on a whole index. `session` must read one snapshot (REPEATABLE READ) in which
    `safe` was read, so every event at or below it is already visible."""
    if safe <= after:
        return Page([], after)
    rows = session.execute(query("events_page"), {"after": after, "safe": safe, "page": size}).mappings().all()
    events = [
        StoredEvent(
            int(r["id"]),
            int(r["event_index"]),
            str(r["topic"]),
            str(r["type"]),
            str(r["key"]),
            str(r["namespace"]),
            list(r["filter_keys"]) if r["filter_keys"] is not None else None,
        )
        for r in rows
    ]
    upto = int(rows[0]["upto"]) if rows else safe
    return Page(events, upto)


PLACEMENT_METRICS = "placement_metrics"


def load_rows(session: Session, events: Sequence[StoredEvent]) -> None:
    """Set each event's row: its snapshot as a row of its table again (jsonb_populate_record does
    the typing), read only for the events a subscriber receives; jobs also get the status
    derived the way the job endpoints derive it."""
    for topic, model in MODELS.items():
        wanted = {e.id: e for e in events if e.topic == topic}
        if not wanted:
            continue
        # The mapped columns: a table may hold one its model leaves unmapped (rolling upgrades).
        columns = set(model.__mapper__.columns.keys())
        for r in session.execute(query(f"event_rows_{topic}"), {"ids": list(wanted)}).mappings():
            event = wanted[int(r["_event_id"])]
            event.row = model(**{k: v for k, v in r.items() if k in columns})
            if r.get(PLACEMENT_METRICS):  # allocations' (revision 0037), absent on the schema before
                event.extra[PLACEMENT_METRICS] = str(r[PLACEMENT_METRICS])
            if "_status" in r:
                event.extra["status"] = str(r["_status"])
            if "_deleted" in r:
                event.extra["deleted"] = "true" if r["_deleted"] else "false"


def delete_before(session: Session, cutoff: datetime, batch: int) -> int:
    """Delete one batch of events written before `cutoff`; how many went."""
    return int(session.execute(query("events_gc"), {"cutoff": cutoff, "batch": batch}).scalar_one())
