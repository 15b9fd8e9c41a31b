"""The event stream's heartbeat line (its frames are app/wire/events.py's EventsJson)."""

from __future__ import annotations

from typing import TypedDict


class HeartbeatJson(TypedDict):
    """Nomad's JsonHeartbeat: an empty object."""
