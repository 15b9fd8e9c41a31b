"""Nomad's ACL JSON as the API serves it and the CLI reads it: ACLToken and its list stub
(no SecretID), ACLPolicy and its list stub (no Rules), and the token a CLI creates."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

AclTokenType = Literal["client", "management"]


class AclTokenStubJson(TypedDict):
    AccessorID: str
    Name: str
    Type: str
    Policies: list[str]
    Roles: None  # corral has no ACL roles
    Global: bool
    CreateTime: str | None  # RFC 3339
    ExpirationTime: str | None
    ExpirationTTL: int  # nanoseconds
    CreateIndex: int
    ModifyIndex: int


class AclTokenJson(TypedDict):
    """Nomad's ACLToken; SecretID is "" except in the answer that creates the token (and to
    its own holder)."""

    AccessorID: str
    SecretID: str
    Name: str
    Type: str
    Policies: list[str]
    Roles: None
    Global: bool
    CreateTime: str | None
    ExpirationTime: str | None
    ExpirationTTL: int
    CreateIndex: int
    ModifyIndex: int


class AclPolicyJson(TypedDict):
    """Nomad's ACLPolicy; Rules and JobACL only on a single policy's read (the list leaves them out)."""

    Name: str
    Description: str
    Rules: NotRequired[str]
    JobACL: NotRequired[None]
    CreateIndex: int
    ModifyIndex: int


class AclTokenRequest(TypedDict):
    """The body of PUT /v1/acl/token as `acl token create` sends it."""

    Name: str
    Type: str
    Policies: list[str]
    Global: bool
    ExpirationTTL: NotRequired[str]
