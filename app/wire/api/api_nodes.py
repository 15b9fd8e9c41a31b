"""Bodies of the node writes as the CLI sends them, and a node as GET /v1/node/:id answers it
(the node itself is in app/wire's node module)."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from app.wire.node import NodeJson


class DrainSpecJson(TypedDict):
    Deadline: int  # nanoseconds; -1 forces the drain now, 0 waits for no deadline
    IgnoreSystemJobs: bool


class NodeDrainRequest(TypedDict):
    """Nomad's NodeUpdateDrainRequest: a DrainSpec enables the drain, none disables it."""

    NodeID: str
    MarkEligible: bool
    DrainSpec: NotRequired[DrainSpecJson]


class NodeReadJson(NodeJson, total=False):
    """corral's extensions of a node read: when the client last heartbeated (Unix nanoseconds,
    0 before its first one) and where the servers reach it."""

    LastHeartbeat: int
    LinkAddr: str
