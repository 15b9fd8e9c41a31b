"""Nomad's event stream frames (api.Events): the frame of one index and each event in it."""

from __future__ import annotations

from typing import TypedDict

from app.wire.json import JsonObject


class EventsJson(TypedDict, total=False):
    """Nomad's Events."""

    Index: int
    Events: list[EventJson]
    Err: str


class EventJson(TypedDict, total=False):
    """Nomad's Event."""

    Topic: str
    Type: str
    Key: str
    Namespace: str
    FilterKeys: list[str] | None
    Index: int
    Payload: JsonObject
