"""GET /v1/event/stream: Nomad's event stream, newline-delimited JSON.

The stream never holds a database connection while it waits: it reads a page of committed
events in one snapshot, releases the connection, writes the frames, and sleeps on the
process's index watcher (as blocking queries do) until a watched table moves or a heartbeat
is due. It reads only up to the state index of that snapshot, below which every change has
committed, so an event that commits late with a lower index is never skipped."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import structlog
from flask import Blueprint, Response, request
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeout

from app.api.access.callers import caller
from app.api.access.event_filter import Subscription, TopicError, denied_topic, parse_topics
from app.api.encoders import event_encode
from app.api.http.context import ApiState, state
from app.api.http.hangups import Caller
from app.api.http.params import integer_arg, namespace
from app.db.state_index import current_index
from app.store import events as store
from app.values.errors import InvalidInput
from app.wire.api.api_events import HeartbeatJson
from app.wire.events import EventsJson

bp = Blueprint("events", __name__)
log = structlog.get_logger(__name__)
PAGE_SIZE = 500  # events read per snapshot (a page never splits one index)


@bp.get("/event/stream")
def stream() -> Response:
    """?topic=Topic[:Key] (repeatable; '*' for any topic or key), ?index=N (start at the first
    retained event with an index of at least N; 0, the default, replays every retained event),
    ?namespace= (default 'default'; '*' for all the token may read)."""
    try:
        topics = parse_topics(request.args.getlist("topic"))
    except TopicError as err:
        raise InvalidInput.of("topic", f"Invalid topic query: {err}") from None
    start = integer_arg("index") or 0
    ns = namespace(allow_wildcard=True)
    acl = caller().acl
    if denied_topic(topics, [ns] if ns is not None else [], acl) is not None:
        return Response("Permission denied", status=403, content_type="text/plain; charset=utf-8")
    subscription = Subscription(topics, frozenset([ns]) if ns is not None else None, acl)
    gone = state().hangups.caller(request.environ.get("gunicorn.socket"))
    lines = _lines(state(), subscription, start - 1, gone)
    return Response(lines, content_type="application/json", headers={"Cache-Control": "no-cache"})


def _lines(current: ApiState, subscription: Subscription, after: int, gone: Caller) -> Iterator[str]:
    heartbeat_s = current.settings.event_stream_heartbeat_s
    yield _line(event_encode.HEARTBEAT)  # as Nomad's stream starts: the response is open
    next_beat = time.monotonic() + heartbeat_s
    while True:
        try:
            frames, after, safe = _read(current, subscription, after)
        except (DBAPIError, PoolTimeout) as err:
            # The client resumes with ?index= past its last frame; nothing is lost.
            log.warning("event stream ended: database unavailable", error=str(err))
            return
        for frame in frames:
            yield _line(frame)
        if after < safe:
            continue  # more pages are already committed
        if current.watcher.released or gone():
            return
        if time.monotonic() >= next_beat:
            yield _line(event_encode.HEARTBEAT)
            next_beat = time.monotonic() + heartbeat_s
        current.watcher.wait_beyond(store.TABLES, safe, next_beat, gone)


def _read(current: ApiState, subscription: Subscription, after: int) -> tuple[list[EventsJson], int, int]:
    """One page in one snapshot; the connection goes back to the pool before anything is sent."""
    with current.reads() as session, session.begin():
        safe = current_index(session, store.TABLES)
        page = store.page_after(session, after, safe, PAGE_SIZE)
        chosen = [e for e in page.events if subscription.wants(e.topic, e.key, e.namespace, e.filter_keys)]
        store.load_rows(session, chosen)
        payloads = event_encode.payloads(session, chosen)
    return list(event_encode.frames(zip(chosen, payloads, strict=True))), page.upto, safe


def _line(body: EventsJson | HeartbeatJson) -> str:
    return json.dumps(body, separators=(",", ":")) + "\n"
