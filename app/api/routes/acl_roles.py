"""/v1/acl/roles and /v1/acl/role: Nomad's ACL roles. Writes need a management token; a client
token reads (and lists) only the roles it links, as Nomad's ACL.GetRoleByID and ListRoles do."""

from __future__ import annotations

import base64
import hashlib
import uuid

from flask import Blueprint, Response

from app.api.access.callers import caller
from app.api.http.context import read, respond, write
from app.api.http.params import json_body, prefix_arg
from app.api.routes.acl import MAX_DESCRIPTION, POLICY_NAME, enabled
from app.models import AclRole
from app.store import acl_roles as store
from app.values.errors import FieldProblem, Forbidden, InvalidInput, NotFound
from app.wire.acl import ACLRole
from app.wire.json import JsonObject

bp = Blueprint("acl_roles", __name__)
ROLE_NAME = POLICY_NAME  # Nomad: ^[a-zA-Z0-9-]{1,128}$ for both


def role_json(role: AclRole) -> ACLRole:
    return {
        "ID": str(role.id),
        "Name": role.name,
        "Description": role.description,
        "Policies": [{"Name": name} for name in role.policies],
        "Hash": base64.b64encode(role_hash(role.name, role.description, role.policies)).decode(),
        "CreateIndex": role.create_index,
        "ModifyIndex": role.modify_index,
    }


def role_hash(name: str, description: str, policies: list[str]) -> bytes:
    """Nomad's ACLRole.SetHash: BLAKE2b-256 over the fields a user sets, so a client can tell
    whether a role changed without comparing every field."""
    digest = hashlib.blake2b(digest_size=32)
    for part in (name, description, *policies):
        digest.update(part.encode())
    return digest.digest()


def _may_read(role_id: str) -> None:
    who = caller()
    if not (who.acl.management or role_id in who.roles):
        raise Forbidden.of("X-Nomad-Token", "Permission denied")


@bp.get("/acl/roles")
def list_roles() -> Response:
    enabled()
    who = caller()
    rows, index = read(["acl_roles"], lambda s: store.list_roles(s, prefix_arg() or ""))
    return respond([role_json(r) for r in rows if who.acl.management or str(r.id) in who.roles], index)


@bp.route("/acl/role", methods=["PUT", "POST"])
def create_role() -> Response:
    enabled()
    body = json_body()
    if body.get("ID"):
        raise InvalidInput.of("ID", "must be empty when creating a role; update with /v1/acl/role/:id")
    spec = role_spec(body)
    role = write(lambda s: store.upsert_role(s, None, spec))
    return respond(role_json(role), role.modify_index)


@bp.get("/acl/role/<role_id>")
def get_role(role_id: str) -> Response:
    enabled()
    key = _role_id(role_id)
    _may_read(str(key))
    role, index = read(["acl_roles"], lambda s: store.get_role(s, key))
    return respond(role_json(role), index)


@bp.get("/acl/role/name/<name>")
def get_role_by_name(name: str) -> Response:
    enabled()
    role, index = read(["acl_roles"], lambda s: store.get_role_by_name(s, name))
    _may_read(str(role.id))
    return respond(role_json(role), index)


@bp.route("/acl/role/<role_id>", methods=["PUT", "POST"])
def update_role(role_id: str) -> Response:
    enabled()
    key = _role_id(role_id)
    body = json_body()
    if body.get("ID") != role_id:
        raise InvalidInput.of("ID", "ACL role ID does not match request path")
    spec = role_spec(body)
    role = write(lambda s: store.upsert_role(s, key, spec))
    return respond(role_json(role), role.modify_index)


@bp.delete("/acl/role/<role_id>")
def delete_role(role_id: str) -> Response:
    enabled()
    key = _role_id(role_id)
    index = write(lambda s: store.delete_role(s, key))
    return respond(None, index)


def _role_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise NotFound.of("ID", "ACL role not found") from None  # Nomad looks it up and finds nothing


def role_spec(body: JsonObject) -> store.RoleSpec:
    """Nomad's ACLRole.Validate: a valid name, a short description, at least one policy."""
    problems: list[FieldProblem] = []
    name = body.get("Name")
    if not isinstance(name, str) or not ROLE_NAME.fullmatch(name):
        problems.append(FieldProblem("Name", f"invalid name {name!r}: 1-128 letters, digits and '-'"))
    description = body.get("Description") or ""
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        problems.append(FieldProblem("Description", f"description longer than {MAX_DESCRIPTION}"))
    policies = _policy_names(body.get("Policies"), problems)
    if problems:
        raise InvalidInput(problems)
    assert isinstance(name, str) and isinstance(description, str)
    return store.RoleSpec(name, description, policies)


def _policy_names(raw: object, problems: list[FieldProblem]) -> tuple[str, ...]:
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        problems.append(FieldProblem("Policies", 'must be a list of {"Name": policy} links'))
        return ()
    names: list[str] = []
    for link in raw:
        name = link.get("Name") if isinstance(link, dict) else None
        if not isinstance(name, str) or not POLICY_NAME.fullmatch(name):
            problems.append(FieldProblem("Policies", f"each link needs the Name of a policy, got {link!r}"))
            continue
        if name not in names:
            names.append(name)
    if not names and not problems:
        problems.append(FieldProblem("Policies", "at least one policy should be specified"))
    return tuple(names)
