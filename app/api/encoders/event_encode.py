"""Events in Nomad's JSON shapes: structs.Events frames ({"Index", "Events"}) whose events carry
their object under the Payload key Nomad uses per topic (JobEvent, AllocationEvent, ...)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from itertools import groupby
from typing import cast

from sqlalchemy.orm import Session

from app.api.encoders import deployment_encode, encode, job_encode, node_encode, variable_encode
from app.store import services
from app.store import variables as variable_store
from app.store.deployment import deployments as deployment_store
from app.store.events import PLACEMENT_METRICS, StoredEvent
from app.wire.api.api_events import HeartbeatJson
from app.wire.events import EventJson, EventsJson
from app.wire.json import JsonObject

HEARTBEAT: HeartbeatJson = {}


def payloads(session: Session, events: list[StoredEvent]) -> list[JsonObject]:
    """Each event's Payload, in order. Deployments' allocation counts are counted now, from the
    allocations as they are (they are never stored with the deployment)."""
    deployment_ids = [e.row.id for e in events if e.topic == "Deployment" and e.row is not None]
    counts = deployment_store.group_counts(session, deployment_ids)
    return [_payload(e, counts) for e in events]


def _payload(event: StoredEvent, counts: deployment_encode.Counts) -> JsonObject:
    row = event.row
    if row is None:  # a snapshot that no longer matches its table; the event still says what changed
        return {}
    if event.topic == "Job":
        body: JsonObject = {"Job": job_encode.job(row, event.extra.get("status", row.status))}
        if row.purged_at is not None:
            body["Deleted"] = True  # a purge is the job's deletion here (GC removes the row later)
        return body
    if event.topic == "Evaluation":
        return {"Evaluation": _json(encode.evaluation(row))}
    if event.topic == "Allocation":
        # Without its Job, as Nomad sends it; with its placement metrics (a column the row does not map).
        return {"Allocation": _json(encode.allocation(row, placement_metrics=event.extra.get(PLACEMENT_METRICS)))}
    if event.topic == "Deployment":
        return {"Deployment": _json(deployment_encode.deployment(row, counts))}
    if event.topic == "Service":
        # Nomad's ServiceRegistrationStreamEvent; a registration is JSON through and through
        return {"Service": cast(JsonObject, services.encode(row))}
    if event.topic == "Variable":
        # Nomad's VariableEvent: the metadata, never the items. The lock stays out: its ID is
        # the holder's secret (the variables routes show it to the holder and management only).
        meta = variable_encode.meta(variable_store.meta_of(row), show_lock=False)
        return {"Metadata": cast(JsonObject, meta), "Deleted": event.extra.get("deleted") == "true"}
    return {"Node": _json(node_encode.node(row))}


def _json(typed: Mapping[str, object]) -> JsonObject:
    """A payload object, typed by its TypedDict, as the Payload's plain JSON (Nomad's
    map[string]any): every value the encoders put in one is JSON."""
    return cast(JsonObject, typed)


def event_json(event: StoredEvent, payload: JsonObject) -> EventJson:
    return {
        "Topic": event.topic,
        "Type": event.type,
        "Key": event.key,
        "Namespace": event.namespace,
        "FilterKeys": event.filter_keys,
        "Index": event.index,
        "Payload": payload,
    }


def frames(events: Iterable[tuple[StoredEvent, JsonObject]]) -> Iterator[EventsJson]:
    """One frame per index, as Nomad sends the events of one raft entry together."""
    for index, group in groupby(events, key=lambda pair: pair[0].index):
        yield {"Index": index, "Events": [event_json(e, p) for e, p in group]}
