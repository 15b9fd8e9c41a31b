"""Nomad's Namespace JSON, and the bodies the CLI writes namespaces and node pools with (a pool as
the API serves it is app/wire/node.py's NodePoolJson)."""

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
