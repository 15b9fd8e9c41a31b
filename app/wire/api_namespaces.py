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
    Name: str
    Description: str
    Meta: dict[str, str] | None
    SchedulerConfiguration: None  # Nomad Enterprise's governance
    NodeIdentityTTL: int
    CreateIndex: int
    ModifyIndex: int
