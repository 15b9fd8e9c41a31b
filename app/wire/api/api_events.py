"""The event stream as /v1/event/stream sends it. Its events carry Namespace and may carry null
FilterKeys, which app/wire/events.py's EventJson does not allow yet: once it does, StreamEventJson
should become that type."""

from __future__ import annotations

from typing import TypedDict

from app.wire.json import JsonObject


class StreamEventJson(TypedDict):
    Topic: str
    Type: str
    Key: str
    Namespace: str
    FilterKeys: list[str] | None
    Index: int
    Payload: JsonObject  # {"Job": ...}, {"Allocation": ...}: the object under its topic's key


class StreamFrameJson(TypedDict):
    Index: int
    Events: list[StreamEventJson]


class HeartbeatJson(TypedDict):
    """Nomad's JsonHeartbeat: an empty object."""
