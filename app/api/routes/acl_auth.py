"""/v1/acl/auth-method(s) and /v1/acl/binding-rule(s): Nomad's SSO configuration. Writes and
single reads need a management token; the list of auth methods is public, as Nomad's (the web
UI shows the methods before anyone has logged in)."""

from __future__ import annotations

import base64
import hashlib
import json
import uuid
from datetime import UTC, datetime

from flask import Blueprint, Response

from app.acl.auth_methods import config_json, method_spec, rule_spec, with_stored_secrets
from app.api.http.context import read, respond, state, write
from app.api.http.params import json_body, prefix_arg
from app.api.routes.acl import enabled
from app.models import AclAuthMethod, AclBindingRule
from app.store import acl_auth as store
from app.values.errors import InvalidInput, NotFound
from app.variables.rules import go_duration
from app.wire.acl import ACLAuthMethod, ACLAuthMethodListStub, ACLBindingRule, ACLBindingRuleListStub
from app.wire.json import JsonObject

bp = Blueprint("acl_auth", __name__)


def _time(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def _hash(fields: object) -> str:
    """Nomad's SetHash: BLAKE2b-256 over the fields an operator sets, base64 in the JSON."""
    digest = hashlib.blake2b(json.dumps(fields, sort_keys=True).encode(), digest_size=32).digest()
    return base64.b64encode(digest).decode()


def _method_hash(method: AclAuthMethod) -> str:
    return _hash(
        [
            method.name,
            method.type,
            method.token_locality,
            method.token_name_format,
            method.max_token_ttl_ns,
            method.is_default,
            method.config,
        ]
    )


def method_json(method: AclAuthMethod) -> ACLAuthMethod:
    return {
        "Name": method.name,
        "Type": method.type,
        "TokenLocality": method.token_locality,
        "TokenNameFormat": method.token_name_format,
        "MaxTokenTTL": go_duration(method.max_token_ttl_ns),
        "Default": method.is_default,
        "Config": config_json(method.config),
        "Hash": _method_hash(method),
        "CreateTime": _time(method.create_time),
        "ModifyTime": _time(method.modify_time),
        "CreateIndex": method.create_index,
        "ModifyIndex": method.modify_index,
    }


def method_stub(method: AclAuthMethod) -> ACLAuthMethodListStub:
    return {
        "Name": method.name,
        "Type": method.type,
        "Default": method.is_default,
        "Hash": _method_hash(method),
        "CreateIndex": method.create_index,
        "ModifyIndex": method.modify_index,
    }


def _rule_hash(rule: AclBindingRule) -> str:
    return _hash([rule.id.hex, rule.description, rule.auth_method, rule.selector, rule.bind_type, rule.bind_name])


def rule_json(rule: AclBindingRule) -> ACLBindingRule:
    return {
        "ID": str(rule.id),
        "Description": rule.description,
        "AuthMethod": rule.auth_method,
        "Selector": rule.selector,
        "BindType": rule.bind_type,
        "BindName": rule.bind_name,
        "Hash": _rule_hash(rule),
        "CreateTime": _time(rule.create_time),
        "ModifyTime": _time(rule.modify_time),
        "CreateIndex": rule.create_index,
        "ModifyIndex": rule.modify_index,
    }


def rule_stub(rule: AclBindingRule) -> ACLBindingRuleListStub:
    return {
        "ID": str(rule.id),
        "Description": rule.description,
        "AuthMethod": rule.auth_method,
        "Hash": _rule_hash(rule),
        "CreateIndex": rule.create_index,
        "ModifyIndex": rule.modify_index,
    }


@bp.get("/acl/auth-methods")
def list_methods() -> Response:
    enabled()
    rows, index = read(["acl_auth_methods"], store.list_methods)
    return respond([method_stub(m) for m in rows], index)


@bp.route("/acl/auth-method", methods=["PUT", "POST"])
def create_method() -> Response:
    enabled()
    return _upsert_method(json_body())


@bp.get("/acl/auth-method/<name>")
def get_method(name: str) -> Response:
    enabled()
    method, index = read(["acl_auth_methods"], lambda s: store.get_method(s, name))
    return respond(method_json(method), index)


@bp.route("/acl/auth-method/<name>", methods=["PUT", "POST"])
def update_method(name: str) -> Response:
    enabled()
    body = json_body()
    if body.get("Name") not in (None, "", name):
        raise InvalidInput.of("Name", "ACL auth method name does not match request path")
    return _upsert_method({**body, "Name": name})


def _upsert_method(body: JsonObject) -> Response:
    settings = state().settings
    name = body.get("Name")
    if isinstance(name, str) and name:
        stored, _ = read(["acl_auth_methods"], lambda s: s.get(AclAuthMethod, name))
        if stored is not None:
            body = with_stored_secrets(body, stored.config)
    spec = method_spec(body, settings.acl_token_min_expiration_ttl_s, settings.acl_token_max_expiration_ttl_s)
    method = write(lambda s: store.upsert_method(s, spec, datetime.now(UTC)))
    return respond(method_json(method), method.modify_index)


@bp.delete("/acl/auth-method/<name>")
def delete_method(name: str) -> Response:
    enabled()
    index = write(lambda s: store.delete_method(s, name))
    return respond(None, index)


@bp.get("/acl/binding-rules")
def list_rules() -> Response:
    enabled()
    rows, index = read(["acl_binding_rules"], lambda s: store.list_rules(s, prefix_arg() or ""))
    return respond([rule_stub(r) for r in rows], index)


@bp.route("/acl/binding-rule", methods=["PUT", "POST"])
def create_rule() -> Response:
    enabled()
    body = json_body()
    if body.get("ID"):
        raise InvalidInput.of("ID", "must be empty when creating a binding rule; update with /v1/acl/binding-rule/:id")
    spec = rule_spec(body)
    rule = write(lambda s: store.upsert_rule(s, None, spec, datetime.now(UTC)))
    return respond(rule_json(rule), rule.modify_index)


@bp.get("/acl/binding-rule/<rule_id>")
def get_rule(rule_id: str) -> Response:
    enabled()
    key = _rule_id(rule_id)
    rule, index = read(["acl_binding_rules"], lambda s: store.get_rule(s, key))
    return respond(rule_json(rule), index)


@bp.route("/acl/binding-rule/<rule_id>", methods=["PUT", "POST"])
def update_rule(rule_id: str) -> Response:
    """Nomad merges the update onto the stored rule (fields left empty keep their value) and
    refuses to move a rule to another auth method."""
    enabled()
    key = _rule_id(rule_id)
    body = json_body()
    if body.get("ID") not in (None, "", rule_id):
        raise InvalidInput.of("ID", "ACL binding rule ID does not match request path")
    current, _ = read(["acl_binding_rules"], lambda s: store.get_rule(s, key))
    if body.get("AuthMethod") not in (None, "", current.auth_method):
        raise InvalidInput.of("AuthMethod", "cannot update auth method for binding rule, create a new rule instead")
    merged: JsonObject = {
        "Description": body.get("Description") or current.description,
        "AuthMethod": current.auth_method,
        "Selector": body.get("Selector") or current.selector,
        "BindType": body.get("BindType") or current.bind_type,
        "BindName": body.get("BindName") or current.bind_name,
    }
    spec = rule_spec(merged)
    rule = write(lambda s: store.upsert_rule(s, key, spec, datetime.now(UTC)))
    return respond(rule_json(rule), rule.modify_index)


@bp.delete("/acl/binding-rule/<rule_id>")
def delete_rule(rule_id: str) -> Response:
    enabled()
    key = _rule_id(rule_id)
    index = write(lambda s: store.delete_rule(s, key))
    return respond(None, index)


def _rule_id(raw: str) -> uuid.UUID:
    try:
        return uuid.UUID(raw)
    except ValueError:
        raise NotFound.of("ID", "ACL binding rule not found") from None  # Nomad looks it up and finds nothing
