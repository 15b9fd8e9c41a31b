"""Nomad's ACL role JSON (api.ACLRole, api.ACLRoleListStub and the links to and from it)."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class ACLRolePolicyLink(TypedDict):
    Name: str


class ACLTokenRoleLink(TypedDict):
    ID: str
    Name: str


class ACLRole(TypedDict):
    """Both the role and its list stub: Nomad's ACLRoleListStub carries the same fields."""

    ID: str
    Name: str
    Description: str
    Policies: list[ACLRolePolicyLink]
    Hash: str  # base64 of the BLAKE2b-256 of name, description and policy names
    CreateIndex: int
    ModifyIndex: int


class ACLToken(TypedDict):
    """Nomad's ACLToken; its list stub (ACLTokenListStub) is the same without SecretID."""

    AccessorID: str
    SecretID: NotRequired[str]
    Name: str
    Type: str
    Policies: list[str]
    Roles: list[ACLTokenRoleLink] | None
    Global: bool
    CreateTime: str | None
    ExpirationTime: str | None
    ExpirationTTL: int
    CreateIndex: int
    ModifyIndex: int
