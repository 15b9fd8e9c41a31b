"""Bodies of the node writes as the CLI sends them (the node itself is in app/wire's node module)."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class DrainSpecJson(TypedDict):
    Deadline: int  # nanoseconds; -1 forces the drain now, 0 waits for no deadline
    IgnoreSystemJobs: bool


class NodeDrainRequest(TypedDict):
    """Nomad's NodeUpdateDrainRequest: a DrainSpec enables the drain, none disables it."""

    NodeID: str
    MarkEligible: bool
    DrainSpec: NotRequired[DrainSpecJson]
