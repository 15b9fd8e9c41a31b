"""Nomad's ACL JSON as the API serves it and the CLI reads it: ACLToken and its list stub
(no SecretID), ACLPolicy and its list stub (no Rules), and the token a CLI creates."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

AclTokenType = Literal["client", "management"]


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
    Roles: NotRequired[list[dict[str, str]]]  # Nomad's ACLTokenRoleLink: by ID or by Name
    ExpirationTTL: NotRequired[str]
