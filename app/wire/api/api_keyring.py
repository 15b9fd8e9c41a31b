"""Nomad's RootKeyMeta: a keyring key as /v1/operator/keyring/keys lists it."""

from __future__ import annotations

from typing import TypedDict


class RootKeyMetaJson(TypedDict):
    KeyID: str
    Algorithm: str
    CreateTime: int  # Unix nanoseconds
    CreateIndex: int
    ModifyIndex: int
    State: str
    PublishTime: int
