"""/v1/namespaces and /v1/namespace/:name (Nomad's namespace objects). 'default' always exists.
Reads are filtered to namespaces the caller's token may use; writes need a management token."""

from __future__ import annotations

import re

from flask import Blueprint, Response

from app.api.access.callers import caller
from app.api.http.context import read, respond, write
from app.api.http.params import json_body, path_value, prefix_arg
from app.models import Namespace
from app.store import namespaces as store
from app.values.errors import FieldProblem, InvalidInput
from app.wire.api.api_namespaces import NamespaceJson

bp = Blueprint("namespaces", __name__)
NAME = re.compile(r"^[A-Za-z0-9-]{1,128}$")
MAX_DESCRIPTION = 256


def namespace_json(row: Namespace) -> NamespaceJson:
    return {
        "Name": row.name,
        "Description": row.description,
        "Quota": "",
        "Meta": dict(row.meta or {}),
        "Capabilities": None,
        "NodePoolConfiguration": None,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


@bp.get("/namespaces")
def list_namespaces() -> Response:
    prefix = prefix_arg() or ""
    rows, index = read(["namespaces"], lambda s: [namespace_json(r) for r in store.list_namespaces(s, prefix)])
    return respond(rows, index)


@bp.get("/namespace/<name>")
def get_namespace(name: str) -> Response:
    if not caller().acl.allow_namespace(name):
        return Response("Permission denied", status=403, content_type="text/plain; charset=utf-8")
    row, index = read(["namespaces"], lambda s: namespace_json(store.get_namespace(s, name)))
    return respond(row, index)


@bp.route("/namespace", methods=["PUT", "POST"], defaults={"name": None})
@bp.route("/namespace/<name>", methods=["PUT", "POST"])
def put_namespace(name: str | None) -> Response:
    body = json_body()
    given = body.get("Name")
    problems = []
    if name is None:
        if not isinstance(given, str) or not given:
            raise InvalidInput.of("Name", "is required")
        name = path_value(given, "Name")
    elif given not in (None, "", name):
        problems.append(FieldProblem("Name", "does not match the name in the URL"))
    if not NAME.fullmatch(name):
        problems.append(FieldProblem("Name", "must be 1-128 letters, digits and '-'"))
    description = body.get("Description", "") or ""
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        problems.append(FieldProblem("Description", f"must be a string of at most {MAX_DESCRIPTION} characters"))
    raw_meta = body.get("Meta") or {}
    meta = {k: v for k, v in raw_meta.items() if isinstance(v, str)} if isinstance(raw_meta, dict) else {}
    if not isinstance(raw_meta, dict) or len(meta) != len(raw_meta):
        problems.append(FieldProblem("Meta", "must be an object of strings"))
    if problems:
        raise InvalidInput(problems)
    final = name
    index = write(lambda s: store.upsert_namespace(s, final, str(description), meta))
    return respond(None, index)


@bp.delete("/namespace/<name>")
def delete_namespace(name: str) -> Response:
    index = write(lambda s: store.delete_namespace(s, name))
    return respond(None, index)
