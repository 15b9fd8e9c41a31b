"""/v1/acl: bootstrap, policies and tokens, in Nomad's shapes. Token secrets are returned only
when a token is created (and to the token itself, by /v1/acl/token/self): only their SHA-256 is
stored, so a token read by its AccessorID shows an empty SecretID."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta

from flask import Blueprint, Response, request
from sqlalchemy.orm import Session

from app.acl.policy import PolicyError, parse
from app.api.access.callers import caller
from app.api.http.context import read, respond, state, write
from app.api.http.params import json_body, prefix_arg, uuid_value
from app.jobspec.durations import DurationError, duration_ns
from app.models import AclPolicy, AclRole, AclToken
from app.store import acl as store
from app.store import acl_roles as roles_store
from app.values.errors import FieldProblem, Forbidden, InvalidInput
from app.wire.acl import ACLPolicy, ACLToken, ACLTokenRoleLink
from app.wire.json import JsonObject, JsonValue

bp = Blueprint("acl", __name__)
NANOS = 1_000_000_000
POLICY_NAME = re.compile(r"^[A-Za-z0-9-]{1,128}$")
MAX_DESCRIPTION = 256
MAX_POLICIES = 256


def enabled() -> None:
    if not state().settings.acl_enabled:
        raise InvalidInput.of("", "ACL support disabled")


def _time(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def token_json(token: AclToken, secret: str = "", roles: Sequence[AclRole] = ()) -> ACLToken:
    """Nomad's ACLToken; `roles` are the token's linked roles that still exist (Roles is null
    when there are none, as Nomad's nil slice)."""
    links: list[ACLTokenRoleLink] = [{"ID": str(r.id), "Name": r.name} for r in roles]
    return {
        "AccessorID": str(token.accessor_id),
        "SecretID": secret,
        "Name": token.name,
        "Type": token.type,
        "Policies": list(token.policies),
        "Roles": links or None,
        "Global": token.global_,
        "CreateTime": _time(token.create_time),
        "ExpirationTime": _time(token.expiration_time),
        "ExpirationTTL": token.expiration_ttl_ns,
        "CreateIndex": token.create_index,
        "ModifyIndex": token.modify_index,
    }


def _with_roles(session: Session, token: AclToken, secret: str = "") -> ACLToken:
    return token_json(token, secret, roles_store.roles_by_id(session, token.roles))


def _token_stub(session: Session, token: AclToken) -> ACLToken:
    stub = _with_roles(session, token)
    del stub["SecretID"]
    return stub


def policy_json(row: AclPolicy, *, full: bool) -> ACLPolicy:
    """`full`: with its Rules (a single policy's read); lists leave them out, as Nomad's stub."""
    if not full:
        return {
            "Name": row.name,
            "Description": row.description,
            "CreateIndex": row.create_index,
            "ModifyIndex": row.modify_index,
        }
    return {
        "Name": row.name,
        "Description": row.description,
        "Rules": row.rules,
        "JobACL": None,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


@bp.route("/acl/bootstrap", methods=["PUT", "POST"])
def bootstrap() -> Response:
    enabled()
    raw = json_body() if _has_body() else {}
    given = raw.get("BootstrapSecret") or None
    if given is not None and not isinstance(given, str):
        raise InvalidInput.of("BootstrapSecret", "must be a UUID string")
    if given is not None:
        uuid_value(given, "BootstrapSecret")
    reset = state().settings.acl_bootstrap_reset_index
    token, secret = write(lambda s: store.bootstrap(s, reset, given, datetime.now(UTC)))
    return respond(token_json(token, secret), token.modify_index)


def _has_body() -> bool:
    return bool(request.get_data(cache=True).strip())


@bp.get("/acl/policies")
def list_policies() -> Response:
    enabled()
    prefix = prefix_arg() or ""
    who = caller()
    rows, index = read(["acl_policies"], lambda s: store.list_policies(s, prefix))
    visible = [r for r in rows if who.acl.management or r.name in who.policies]
    return respond([policy_json(r, full=False) for r in visible], index)


@bp.get("/acl/policy/self")
def policy_self() -> Response:
    """Nomad's special case of /v1/acl/policy/:name: the policies the caller's token carries,
    its roles' included, as list stubs (all of them for a management token, as ACL.ListPolicies;
    none for a workload identity: corral attaches no policies to jobs)."""
    enabled()
    who = caller()
    rows, index = read(["acl_policies"], lambda s: store.list_policies(s))
    visible = [r for r in rows if who.acl.management or r.name in who.policies]
    return respond([policy_json(r, full=False) for r in visible], index)


@bp.get("/acl/policy/<name>")
def get_policy(name: str) -> Response:
    enabled()
    who = caller()
    if not (who.acl.management or name in who.policies):
        return Response("Permission denied", status=403, content_type="text/plain; charset=utf-8")
    row, index = read(["acl_policies"], lambda s: store.get_policy(s, name))
    return respond(policy_json(row, full=True), index)


@bp.route("/acl/policy/<name>", methods=["PUT", "POST"])
def put_policy(name: str) -> Response:
    enabled()
    body = json_body()
    problems = []
    if not POLICY_NAME.fullmatch(name):
        problems.append(FieldProblem("Name", "must be 1-128 letters, digits and '-'"))
    if body.get("Name") not in (None, "", name):
        problems.append(FieldProblem("Name", "does not match the name in the URL"))
    description = body.get("Description", "") or ""
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        problems.append(FieldProblem("Description", f"must be a string of at most {MAX_DESCRIPTION} characters"))
    rules = body.get("Rules")
    if not isinstance(rules, str):
        problems.append(FieldProblem("Rules", "is required: the policy in HCL or JSON"))
    else:
        try:
            parse(rules)
        except PolicyError as err:
            problems.append(FieldProblem("Rules", str(err)))
    if problems:
        raise InvalidInput(problems)
    assert isinstance(rules, str)
    index = write(lambda s: store.upsert_policy(s, name, str(description), rules))
    return respond(None, index)


@bp.delete("/acl/policy/<name>")
def delete_policy(name: str) -> Response:
    enabled()
    index = write(lambda s: store.delete_policy(s, name))
    return respond(None, index)


@bp.get("/acl/tokens")
def list_tokens() -> Response:
    enabled()
    prefix = prefix_arg() or ""
    rows, index = read(["acl_tokens"], lambda s: [_token_stub(s, t) for t in store.list_tokens(s, prefix)])
    return respond(rows, index)


@bp.route("/acl/token", methods=["PUT", "POST"])
def create_token() -> Response:
    enabled()
    body = json_body()
    if body.get("AccessorID"):
        raise InvalidInput.of("AccessorID", "must be empty when creating a token; update with /v1/acl/token/:accessor")
    spec, links = _token_spec(body, datetime.now(UTC))

    def create(session: Session) -> ACLToken:
        linked = replace(spec, roles=roles_store.link_roles(session, links))
        token, secret = store.create_token(session, linked, datetime.now(UTC))
        return _with_roles(session, token, secret)

    created = write(create)
    return respond(created, created["ModifyIndex"])


@bp.get("/acl/token/self")
def token_self() -> Response:
    enabled()
    who = caller()
    if not who.secret:
        raise Forbidden.of("X-Nomad-Token", "is required: the token to describe")
    token, index = read(
        ["acl_tokens"], lambda s: _with_roles(s, store.get_token(s, uuid.UUID(who.accessor)), who.secret)
    )
    return respond(token, index)


@bp.get("/acl/token/<accessor>")
def get_token(accessor: str) -> Response:
    enabled()
    key = uuid_value(accessor, "AccessorID")
    token, index = read(["acl_tokens"], lambda s: _with_roles(s, store.get_token(s, key)))
    return respond(token, index)


@bp.route("/acl/token/<accessor>", methods=["PUT", "POST"])
def update_token(accessor: str) -> Response:
    enabled()
    key = uuid_value(accessor, "AccessorID")
    body = json_body()
    if body.get("AccessorID") not in (None, "", accessor):
        raise InvalidInput.of("AccessorID", "does not match the accessor in the URL")
    for field in ("ExpirationTTL", "ExpirationTime"):
        if body.get(field):
            raise InvalidInput.of(field, "cannot be changed once a token exists")
    spec, links = _token_spec(
        {k: v for k, v in body.items() if k not in ("ExpirationTTL", "ExpirationTime")}, datetime.now(UTC)
    )

    def change(session: Session) -> ACLToken:
        current = store.get_token(session, key)
        if bool(body.get("Global", current.global_)) != current.global_:
            raise InvalidInput.of("Global", "cannot be toggled")
        roles = roles_store.link_roles(session, links)
        return _with_roles(session, store.update_token(session, key, spec.name, spec.type, spec.policies, roles))

    token = write(change)
    return respond(token, token["ModifyIndex"])


@bp.delete("/acl/token/<accessor>")
def delete_token(accessor: str) -> Response:
    enabled()
    key = uuid_value(accessor, "AccessorID")
    index = write(lambda s: store.delete_token(s, key))
    return respond(None, index)


def _token_spec(body: JsonObject, now: datetime) -> tuple[store.TokenSpec, list[roles_store.RoleLink]]:
    problems: list[FieldProblem] = []
    name = body.get("Name", "") or ""
    if not isinstance(name, str) or len(name) > MAX_DESCRIPTION:
        problems.append(FieldProblem("Name", f"must be a string of at most {MAX_DESCRIPTION} characters"))
    kind = body.get("Type") or "client"
    if kind not in ("client", "management"):
        problems.append(FieldProblem("Type", f"must be 'client' or 'management', got {kind!r}"))
    given = body.get("Policies") or []
    policies = [p for p in given if isinstance(p, str) and POLICY_NAME.fullmatch(p)] if isinstance(given, list) else []
    if not isinstance(given, list) or len(policies) != len(given):
        problems.append(FieldProblem("Policies", "must be a list of policy names"))
        policies = []
    elif len(policies) > MAX_POLICIES:
        problems.append(FieldProblem("Policies", f"at most {MAX_POLICIES} policies"))
    links = _role_links(body.get("Roles"), problems)
    if kind == "client" and not policies and not links:
        problems.append(FieldProblem("Policies", "a client token needs at least one policy or role"))
    if kind == "management" and (policies or links):
        problems.append(FieldProblem("Policies", "a management token cannot be associated with policies or roles"))
    global_ = body.get("Global", False)
    if not isinstance(global_, bool):
        problems.append(FieldProblem("Global", "must be a boolean"))
    expiration, ttl_ns = _expiration(body, now, problems)
    if problems:
        raise InvalidInput(problems)
    spec = store.TokenSpec(str(name), str(kind), tuple(dict.fromkeys(policies)), bool(global_), expiration, ttl_ns)
    return spec, links


def _role_links(raw: JsonValue, problems: list[FieldProblem]) -> list[roles_store.RoleLink]:
    """Nomad's ACLTokenRoleLink list: each link names its role by ID or, without one, by Name."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        problems.append(FieldProblem("Roles", 'must be a list of {"ID": ...} or {"Name": ...} links'))
        return []
    links: list[roles_store.RoleLink] = []
    for item in raw:
        role_id = item.get("ID") if isinstance(item, dict) else None
        name = item.get("Name") if isinstance(item, dict) else None
        if role_id:
            try:
                links.append(roles_store.RoleLink(uuid.UUID(str(role_id)), ""))
            except ValueError:
                problems.append(FieldProblem("Roles", f"ID must be a UUID, got {role_id!r}"))
        elif isinstance(name, str) and name:
            links.append(roles_store.RoleLink(None, name))
        else:
            problems.append(FieldProblem("Roles", f"each link needs an ID or a Name, got {item!r}"))
    return links


def _expiration(body: JsonObject, now: datetime, problems: list[FieldProblem]) -> tuple[datetime | None, int]:
    settings = state().settings
    ttl_raw, time_raw = body.get("ExpirationTTL"), body.get("ExpirationTime")
    if ttl_raw and time_raw:
        problems.append(FieldProblem("ExpirationTTL", "set ExpirationTTL or ExpirationTime, not both"))
        return None, 0
    if ttl_raw:
        try:
            ttl_ns = duration_ns(ttl_raw)
        except DurationError as err:
            problems.append(FieldProblem("ExpirationTTL", str(err)))
            return None, 0
        low, high = settings.acl_token_min_expiration_ttl_s, settings.acl_token_max_expiration_ttl_s
        if not low <= ttl_ns / NANOS <= high:
            problems.append(FieldProblem("ExpirationTTL", f"must be between {low:g}s and {high:g}s"))
            return None, 0
        return now + timedelta(microseconds=ttl_ns // 1000), ttl_ns
    if time_raw:
        try:
            moment = datetime.fromisoformat(str(time_raw).replace("Z", "+00:00"))
        except ValueError:
            problems.append(FieldProblem("ExpirationTime", f"must be an RFC 3339 time, got {time_raw!r}"))
            return None, 0
        if moment.tzinfo is None:
            problems.append(FieldProblem("ExpirationTime", "must carry a time zone (e.g. Z)"))
            return None, 0
        if moment <= now:
            problems.append(FieldProblem("ExpirationTime", "must be in the future"))
            return None, 0
        return moment, 0
    return None, 0
