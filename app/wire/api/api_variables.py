"""Nomad's variable JSON: VariableMetadata (the list stub), VariableDecrypted (metadata and
Items) and VariableLock, whose TTL and LockDelay are Go duration strings."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from app.wire.json import JsonObject


class VariableLockJson(TypedDict):
    ID: str
    TTL: str
    LockDelay: str


class VariableMetaJson(TypedDict):
    Namespace: str
    Path: str
    Lock: NotRequired[VariableLockJson]  # shown to its holder and to management tokens only
    CreateIndex: int
    CreateTime: int  # Unix nanoseconds
    ModifyIndex: int
    ModifyTime: int


class VariableJson(VariableMetaJson):
    """A variable with its items; a 409's conflict to a caller who may not read it has none."""

    Items: dict[str, str] | None


class VariableLockRequest(TypedDict, total=False):
    """A write's Lock: its TTL and LockDelay (Go durations) to acquire, its ID to renew or release."""

    ID: str
    TTL: str
    LockDelay: str


class VariableRequest(TypedDict):
    """PUT /v1/var/:path as `var put` and `var lock` send it; Items as the spec file gave them
    (the server checks they are strings)."""

    Namespace: NotRequired[str]
    Path: str
    Items: NotRequired[JsonObject]
    Lock: NotRequired[VariableLockRequest]
