"""Bodies of the ACL requests the CLI sends (the objects the API serves are in app/wire/acl.py)."""

from __future__ import annotations

from typing import NotRequired, TypedDict


class AclTokenRequest(TypedDict):
    """The body of PUT /v1/acl/token as `acl token create` sends it."""

    Name: str
    Type: str
    Policies: list[str]
    Global: bool
    Roles: NotRequired[list[dict[str, str]]]  # Nomad's ACLTokenRoleLink: by ID or by Name
    ExpirationTTL: NotRequired[str]


class ACLLoginRequest(TypedDict):
    """The body of PUT /v1/acl/login."""

    AuthMethodName: str
    LoginToken: str


class OneTimeTokenExchangeRequest(TypedDict):
    """The body of PUT /v1/acl/token/onetime/exchange."""

    OneTimeSecretID: str


class ACLOIDCAuthURLRequest(TypedDict):
    """The body of PUT /v1/acl/oidc/auth-url."""

    AuthMethodName: str
    RedirectURI: str
    ClientNonce: str


class ACLOIDCCompleteAuthRequest(TypedDict):
    """The body of PUT /v1/acl/oidc/complete-auth (Iss: the callback's `iss`, when the provider sends one)."""

    AuthMethodName: str
    ClientNonce: str
    State: str
    Code: str
    RedirectURI: str
    Iss: NotRequired[str]
