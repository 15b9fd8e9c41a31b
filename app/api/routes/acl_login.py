"""PUT /v1/acl/login (Nomad's ACL.Login with a JWT auth method) and the one-time tokens of the
web UI's login hand-over (/v1/acl/token/onetime and its exchange). A login verifies the JWT
outside any transaction (its keys may come over HTTP), then binds and mints the token in one."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from flask import Blueprint, Response
from sqlalchemy.orm import Session

from app.acl import login
from app.api.access.callers import caller, expired
from app.api.http.context import read, respond, write
from app.api.http.params import json_body
from app.api.routes.acl import enabled, token_json
from app.models import AclAuthMethod
from app.store import acl as tokens_store
from app.store import acl_auth as auth_store
from app.store import acl_one_time as one_time_store
from app.store import acl_roles as roles_store
from app.values.errors import FieldProblem, Forbidden, InvalidInput
from app.wire.acl import ACLToken, OneTimeTokenExchangeResponse, OneTimeTokenUpsertResponse

bp = Blueprint("acl_login", __name__)


@bp.route("/acl/login", methods=["PUT", "POST"])
def login_() -> Response:
    enabled()
    body = json_body()
    method_name, login_token = body.get("AuthMethodName"), body.get("LoginToken")
    problems = []
    if not isinstance(method_name, str) or not method_name:
        problems.append(FieldProblem("AuthMethodName", "invalid login request: missing auth method name"))
    if not isinstance(login_token, str) or not login_token:
        problems.append(FieldProblem("LoginToken", "invalid login request: missing login token"))
    if problems:
        raise InvalidInput(problems)
    assert isinstance(method_name, str) and isinstance(login_token, str)
    method, _ = read(["acl_auth_methods"], lambda s: s.get(AclAuthMethod, method_name))
    if method is None:
        raise InvalidInput.of("AuthMethodName", f"auth-method {method_name!r} not found")
    if method.type != "JWT":
        raise InvalidInput.of("AuthMethodName", f"unsupported auth-method type: {method.type}")
    try:
        claims = login.map_claims(login.verify(login_token, method.config), method.config)
    except login.LoginError as err:
        raise login.LoginRefused.of("LoginToken", f"unable to validate provided token: {err}") from None
    name = login.token_name(method.token_name_format, method.type, method.name, claims)
    token = write(lambda s: mint(s, method, claims, name))
    return respond(token, token["ModifyIndex"])


def mint(
    session: Session, method: AclAuthMethod, claims: login.Claims, name: str, field: str = "LoginToken"
) -> ACLToken:
    """The token a verified login gets from its method's binding rules (JWT and OIDC alike)."""
    bindings = auth_store.bind(session, method, claims)
    if bindings.none():
        raise InvalidInput.of(field, "no role or policy bindings matched")
    now = datetime.now(UTC)
    ttl_ns = method.max_token_ttl_ns
    spec = tokens_store.TokenSpec(
        name=name,
        type="management" if bindings.management else "client",
        policies=bindings.policies,
        global_=method.token_locality == "global",
        expiration_time=now + timedelta(microseconds=ttl_ns // 1000) if ttl_ns else None,
        expiration_ttl_ns=ttl_ns,
        roles=bindings.roles,
    )
    token, secret = tokens_store.create_token(session, spec, now)
    return token_json(token, secret, roles_store.roles_by_id(session, token.roles))


@bp.route("/acl/token/onetime", methods=["PUT", "POST"])
def create_one_time() -> Response:
    """A one-time secret for the calling token (Nomad: anonymous callers have none to hand over)."""
    enabled()
    who = caller()
    try:
        accessor = uuid.UUID(who.accessor)
    except ValueError:
        raise Forbidden.of("X-Nomad-Token", "Permission denied") from None
    row, secret = write(lambda s: one_time_store.create(s, accessor, who.secret, datetime.now(UTC)))
    body: OneTimeTokenUpsertResponse = {
        "OneTimeToken": {
            "OneTimeSecretID": secret,
            "AccessorID": str(row.accessor_id),
            "ExpiresAt": row.expires_at.astimezone(UTC).isoformat().replace("+00:00", "Z"),
            "CreateIndex": row.create_index,
            "ModifyIndex": row.modify_index,
        }
    }
    return respond(body, row.modify_index)


@bp.route("/acl/token/onetime/exchange", methods=["PUT", "POST"])
def exchange_one_time() -> Response:
    enabled()
    given = json_body().get("OneTimeSecretID")
    if not isinstance(given, str) or not given:
        raise InvalidInput.of("OneTimeSecretID", "is required: the one-time secret to exchange")

    def swap(session: Session) -> ACLToken:
        token, secret = one_time_store.exchange(session, given, datetime.now(UTC))
        if expired(token.expiration_time):
            raise Forbidden.of("OneTimeSecretID", "ACL token expired")
        return token_json(token, secret, roles_store.roles_by_id(session, token.roles))

    token = write(swap)
    body: OneTimeTokenExchangeResponse = {"Token": token}
    return respond(body, token["ModifyIndex"])
