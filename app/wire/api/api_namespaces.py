"""Nomad's Namespace and NodePool JSON, and the bodies the CLI writes them with."""

from __future__ import annotations

from typing import TypedDict


class NamespaceJson(TypedDict):
    Name: str
    Description: str
    Quota: str  # corral has no quotas: always ""
    Meta: dict[str, str]
    Capabilities: None
    NodePoolConfiguration: None
    CreateIndex: int
    ModifyIndex: int


class NamespaceRequest(TypedDict):
    Name: str
    Description: str
    Meta: dict[str, str]


class NodePoolJson(TypedDict):
    """A pool as the API serves it. app/wire/node.py's NodePoolJson (which readers use) does not
    allow the null Meta of a pool without any yet: once it does, this should become that type."""

    Name: str
    Description: str
    Meta: dict[str, str] | None
    SchedulerConfiguration: None  # Nomad Enterprise's governance
    NodeIdentityTTL: int
    CreateIndex: int
    ModifyIndex: int
