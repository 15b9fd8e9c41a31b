"""Who is calling: the token a request presents (X-Nomad-Token or `Authorization: Bearer`),
resolved to its compiled ACL. Without a token the `anonymous` policy applies if it exists. A
token that is unknown or expired raises Denied. A workload identity (a JWT the keyring signed
for a running task) is a token too: it carries Nomad's implicit access of a task (its own
job's variables, its namespace's services)."""

from __future__ import annotations

import functools
from dataclasses import dataclass
from datetime import UTC, datetime

from flask import g, request

from app.acl import policy as pol
from app.acl.capabilities import MANAGEMENT, Acl
from app.api.http.context import state
from app.keyring.identity import IdentityError, looks_like_jwt
from app.store import acl as acl_store
from app.store import identities


class Denied(Exception):
    def __init__(self, message: str = "Permission denied") -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class Caller:
    acl: Acl
    accessor: str  # "anonymous" without a token
    policies: tuple[str, ...]  # effective: the token's own and those of its roles
    secret: str  # as presented (token self echoes it); never logged
    roles: tuple[str, ...] = ()  # IDs of the ACL roles the token links


def header_token() -> str:
    """The token of the request's headers (never the WebSocket handshake's)."""
    token = request.headers.get("X-Nomad-Token", "")
    if not token:
        scheme, _, value = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() == "bearer":
            token = value.strip()
    return token


def presented_token() -> str:
    """The token the request acts with: a WebSocket handshake's once read (app/api/http/ws_handshake.py),
    else the headers'."""
    handshake: str | None = g.get("corral_handshake_token")
    return handshake if handshake is not None else header_token()


@functools.lru_cache(maxsize=1024)
def _parsed(rules: str) -> pol.Policy:
    return pol.parse(rules)


def _compile(all_rules: list[str]) -> Acl:
    policies = []
    for rules in all_rules:
        try:
            policies.append(_parsed(rules))
        except pol.PolicyError:
            continue  # stored rules were validated when written; an unreadable one grants nothing
    return Acl.compile(policies)


def resolve_caller() -> Caller:
    secret = presented_token()
    with state().reads() as session, session.begin():
        if not secret:
            return Caller(_compile(acl_store.anonymous_rules(session)), "anonymous", ("anonymous",), "")
        if looks_like_jwt(secret):
            try:
                claim = identities.resolve(session, secret)
            except IdentityError as err:
                raise Denied(str(err)) from None
            accessor = f"workload:{claim.namespace}/{claim.job}/{claim.group}/{claim.task}"
            return Caller(Acl.compile([], workload=claim), accessor, (), secret)
        found = acl_store.resolve(session, secret)
        if found is None:
            raise Denied("ACL token not found")
        token = found.token
        if expired(token.expiration_time):
            g.corral_accessor = str(token.accessor_id)
            raise Denied("ACL token expired")
        acl = MANAGEMENT if token.type == "management" else _compile(found.rules)
        roles = tuple(str(r) for r in token.roles)
        return Caller(acl, str(token.accessor_id), found.policies, secret, roles)


def caller() -> Caller:
    """The resolved caller of this request (with ACLs off: management)."""
    found: Caller | None = g.get("corral_caller")
    if found is None:
        return Caller(MANAGEMENT, "", (), "")
    return found


def expired(moment: datetime | None) -> bool:
    return moment is not None and moment <= datetime.now(UTC)
