"""PUT /v1/acl/oidc/auth-url and PUT /v1/acl/oidc/complete-auth (Nomad's ACL.OIDCAuthURL and
ACL.OIDCCompleteAuth): the two halves of a browser login through an OIDC auth method. The
first starts a login (kept in acl_oidc_requests, since any API server may get the second) and
answers the provider URL the browser visits; the second uses the login up, exchanges the code
the provider handed the callback, verifies the ID token and mints the token as /v1/acl/login
does. Provider traffic happens outside any transaction."""

from __future__ import annotations

import hmac
import time
from datetime import UTC, datetime

from flask import Blueprint, Response, jsonify

from app.acl import client_assertion, login, oidc
from app.api.http.context import read, respond, state, write
from app.api.http.params import json_body
from app.api.routes.acl import enabled
from app.api.routes.acl_login import mint
from app.models import AclAuthMethod
from app.store import acl_auth as auth_store
from app.store import keyring
from app.values.errors import FieldProblem, InvalidInput
from app.wire.acl import ACLOIDCAuthURLResponse
from app.wire.json import JsonObject

bp = Blueprint("acl_oidc", __name__)


def _fields(body: JsonObject, names: tuple[str, ...], what: str) -> dict[str, str]:
    """The request's string fields; each missing one is named (Nomad's request Validate)."""
    found: dict[str, str] = {}
    problems: list[FieldProblem] = []
    for name in names:
        value = body.get(name)
        if not isinstance(value, str) or not value:
            problems.append(FieldProblem(name, f"invalid OIDC {what} request: missing {name}"))
        else:
            found[name] = value
    if problems:
        raise InvalidInput(problems)
    return found


def _oidc_method(name: str) -> AclAuthMethod:
    method, _ = read(["acl_auth_methods"], lambda s: s.get(AclAuthMethod, name))
    if method is None:
        raise InvalidInput.of("AuthMethodName", f"auth-method {name!r} not found")
    if method.type != "OIDC":
        raise InvalidInput.of("AuthMethodName", f"auth-method {name!r} is of type {method.type}, not OIDC")
    return method


@bp.route("/acl/oidc/auth-url", methods=["PUT", "POST"])
def auth_url() -> Response:
    enabled()
    args = _fields(json_body(), ("AuthMethodName", "RedirectURI", "ClientNonce"), "auth-url")
    method = _oidc_method(args["AuthMethodName"])
    oidc.check_redirect(method.config, args["RedirectURI"])
    _client_assertion(method.config)  # as Nomad's request does: a key that cannot sign fails now, not after the browser
    provider = oidc.discover(method.config)
    wanted = auth_store.OidcRequest(
        client_nonce=args["ClientNonce"],
        auth_method=method.name,
        state=oidc.new_state(),
        redirect_uri=args["RedirectURI"],
        code_verifier=oidc.new_code_verifier() if method.config.get("OIDCEnablePKCE") is True else None,
    )
    started = write(lambda s: auth_store.start_oidc_request(s, wanted, datetime.now(UTC), oidc.REQUEST_LIFETIME))
    url = oidc.auth_url(
        provider, method.config, started.redirect_uri, started.state, started.client_nonce, started.code_verifier
    )
    body: ACLOIDCAuthURLResponse = {"AuthURL": url}
    return jsonify(body)


@bp.route("/acl/oidc/complete-auth", methods=["PUT", "POST"])
def complete_auth() -> Response:
    enabled()
    names = ("AuthMethodName", "ClientNonce", "State", "Code", "RedirectURI")
    body = json_body()
    args = _fields(body, names, "complete-auth")
    iss = body.get("Iss")
    method = _oidc_method(args["AuthMethodName"])
    config = method.config
    assertion = _client_assertion(config)
    started = write(lambda s: auth_store.take_oidc_request(s, args["ClientNonce"], datetime.now(UTC)))
    _check_started(started, args)
    provider = oidc.discover(config)
    oidc.check_callback_issuer(provider, config, iss if isinstance(iss, str) else "")
    tokens = oidc.exchange(provider, config, args["Code"], started.redirect_uri, started.code_verifier, assertion)
    id_claims = oidc.verify_id_token(provider, config, tokens.id_token, started.client_nonce)
    user_claims: JsonObject = {}
    if config.get("OIDCDisableUserInfo") is not True:
        user_claims = oidc.user_info(provider, config, tokens.access_token, str(id_claims["sub"]))
    try:
        claims = login.map_claims(oidc.merged_claims(id_claims, user_claims), config)
    except login.LoginError as err:
        raise login.LoginRefused.of("Code", f"unable to map the provider's claims: {err}") from None
    name = login.token_name(method.token_name_format, method.type, method.name, claims)
    token = write(lambda s: mint(s, method, claims, name, field="AuthMethodName"))
    return respond(token, token["ModifyIndex"])


def _client_assertion(config: JsonObject) -> str | None:
    """The signed client assertion of a method with an OIDCClientAssertion (built before the
    login is used up, so a key that fails to load leaves the login to retry); None without one.
    KeySource "nomad" signs with the keyring's active key, as workload identities are."""
    stored = config.get("OIDCClientAssertion")
    if not isinstance(stored, dict):
        return None
    nomad_key = None
    if stored.get("KeySource") == "nomad":
        root = state().root_key
        active = write(lambda s: keyring.active_key(s, root))
        nomad_key = client_assertion.NomadKey(active.key_id, active.signing)
    try:
        return client_assertion.build(config, nomad_key, int(time.time()))
    except client_assertion.AssertionProblem as err:
        raise InvalidInput.of(err.field, f"invalid OIDCClientAssertion: {err}") from None


def _check_started(started: auth_store.OidcRequest, args: dict[str, str]) -> None:
    """The callback belongs to the login the nonce started (cap/oidc's Exchange checks)."""
    if started.auth_method != args["AuthMethodName"]:
        raise InvalidInput.of("AuthMethodName", "the login was started with another auth method")
    if not hmac.compare_digest(started.state, args["State"]):
        raise InvalidInput.of("State", "state parameter doesn't match the login's: the callback is not this login's")
    if started.redirect_uri != args["RedirectURI"]:
        raise InvalidInput.of("RedirectURI", "redirect URI doesn't match the one the login was started with")
