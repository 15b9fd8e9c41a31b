"""Nomad Variables: /v1/vars (list) and /v1/var/:path (read, write with ?cas=, delete, and the
locks ?lock-acquire, ?lock-renew, ?lock-release), as command/agent/variable_endpoint.go and
nomad/variables_endpoint.go answer them."""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Iterator

from flask import Blueprint, Response, request
from sqlalchemy.orm import Session

from app.api.access.callers import caller
from app.api.encoders import variable_encode as encode
from app.api.http.context import read, respond, state, write
from app.api.http.listing import Entry, Order, as_is, list_query, page, with_token
from app.api.http.params import arg, integer_arg, json_body, namespace, optional_json_body
from app.jobspec.durations import DurationError, duration_ns
from app.store import variables as store
from app.values.errors import InvalidInput, NotFound
from app.variables.rules import MAX_ITEMS_BYTES, LockSpec, VariableRuleError, check_items, check_path, items_size
from app.wire.api.api_variables import VariableMetaJson
from app.wire.json import JsonObject

bp = Blueprint("variables", __name__)
ACQUIRE, RENEW, RELEASE = "lock-acquire", "lock-renew", "lock-release"
WILDCARD = "*"


def _root() -> bytes:
    return state().root_key


@bp.get("/vars")
def list_variables() -> Response:
    """The variables of ?namespace= ('*': all) under ?prefix= the token may list, paged."""
    wanted = namespace(allow_wildcard=True)
    prefix = arg("prefix") or ""
    query = list_query()
    acl = caller().acl

    def fetch(session: Session) -> tuple[list[VariableMetaJson], str | None]:
        entries = [
            Entry(m.namespace, m.path, m.create_index, as_is(body), body)
            for m in store.list_metas(session, wanted, prefix)
            if acl.allow_variable_op(m.namespace, m.path, "list")
            for body in [encode.meta(m, show_lock=acl.management)]
        ]
        return page(entries, Order.NAMESPACE_ID, query)

    (items, token), index = read(["variables"], fetch)
    return with_token(respond(items, index), token)


@bp.get("/var/<path:var_path>")
def get_variable(var_path: str) -> Response:
    ns = _namespace()
    found, index = read(["variables"], lambda s: store.get(s, _root(), ns, var_path))
    if found is None:
        raise NotFound.of("Path", "variable not found")
    return respond(encode.value(found, show_lock=caller().acl.management), index)


@bp.route("/var/<path:var_path>", methods=["PUT", "POST"])
def put_variable(var_path: str) -> Response:
    operation = _lock_operation()
    if operation and arg("cas"):
        raise InvalidInput.of("cas", "CAS can't be used with lock operations")
    body = json_body() if operation in ("", ACQUIRE) else optional_json_body()
    ns = _body_namespace(body)
    lock = _lock(body)
    if operation == RENEW:
        renewed = write(lambda s: store.renew_lock(s, ns, var_path, lock.id))
        return respond(encode.meta(renewed, show_lock=True), renewed.modify_index)
    if operation == RELEASE:
        return _answer(_release(ns, var_path, body, lock), lock.id)
    items = _items(body, required=operation == "")
    if operation == ACQUIRE:
        spec = lock.canonical(str(uuid.uuid4()))
        with _rules():
            _size(items)
            spec.check()
            check_path(var_path)
        return _answer(write(lambda s: store.acquire_lock(s, _root(), ns, var_path, items, spec)), spec.id)
    if lock.ttl_ns or lock.delay_ns:
        raise InvalidInput.of("Lock", "variable should not contain lock definition")
    with _rules():
        check_items(items)
        check_path(var_path)
    cas = integer_arg("cas")
    outcome = write(lambda s: store.set_items(s, _root(), ns, var_path, items, lock.id, cas))
    return _answer(outcome, lock.id)


@bp.delete("/var/<path:var_path>")
def delete_variable(var_path: str) -> Response:
    ns = _namespace()
    cas = integer_arg("cas")
    outcome = write(lambda s: store.delete(s, _root(), ns, var_path, cas))
    if outcome.conflict is not None:
        return _conflict(outcome)
    response = respond(None, outcome.index, status=204)
    response.set_data(b"")
    return response


def _release(ns: str, path: str, body: JsonObject, lock: LockSpec) -> store.Outcome:
    if not lock.id:
        raise InvalidInput.of("Lock", "missing lock information")
    if body.get("Items"):
        raise InvalidInput.of("Items", "lock release operation doesn't take variable items")
    with _rules():
        check_path(path)
    return write(lambda s: store.release_lock(s, ns, path, lock.id))


def _answer(outcome: store.Outcome, lock_id: str) -> Response:
    if outcome.conflict is not None:
        return _conflict(outcome)
    assert outcome.written is not None
    written = outcome.written
    owner = bool(lock_id) and written.meta.lock is not None and written.meta.lock.id == lock_id
    return respond(encode.value(written, show_lock=owner or caller().acl.management), outcome.index)


def _conflict(outcome: store.Outcome) -> Response:
    """409 with the conflicting variable; its items only for a caller that may read it."""
    found = outcome.conflict
    assert found is not None
    readable = caller().acl.allow_variable_op(found.meta.namespace, found.meta.path, "read")
    shown = found if readable else store.Value(found.meta, None)
    body = encode.value(shown, show_lock=caller().acl.management, empty_lock=outcome.conflict_lock)
    return respond(body, found.meta.modify_index, status=409)


def _lock_operation() -> str:
    named = [op for op in (RENEW, ACQUIRE, RELEASE) if op in request.args]
    if len(named) > 1:
        raise InvalidInput.of("lock", "multiple lock operations")
    return named[0] if named else ""


def _namespace() -> str:
    found = namespace(allow_wildcard=False)
    assert found is not None
    return found


def _body_namespace(body: JsonObject) -> str:
    named = body.get("Namespace")
    if named is not None and not isinstance(named, str):
        raise InvalidInput.of("Namespace", "must be a string")
    if named == WILDCARD or arg("namespace") == WILDCARD:
        raise InvalidInput.of("Namespace", 'can not target wildcard ("*")namespace')
    return named or _namespace()


def _items(body: JsonObject, *, required: bool) -> dict[str, str]:
    raw = body.get("Items")
    if raw is None or raw == {}:
        if required:
            raise InvalidInput.of("Items", "variable missing required Items object")
        return {}
    if not isinstance(raw, dict):
        raise InvalidInput.of("Items", "must be an object of strings")
    bad = sorted(str(k) for k, v in raw.items() if not isinstance(v, str))
    if bad:
        raise InvalidInput.of(f"Items.{bad[0]}", "must be a string")
    return {str(k): str(v) for k, v in raw.items()}


def _lock(body: JsonObject) -> LockSpec:
    """The body's Lock: TTL and LockDelay as Go duration strings or nanoseconds."""
    raw = body.get("Lock")
    if raw is None:
        return LockSpec()
    if not isinstance(raw, dict):
        raise InvalidInput.of("Lock", "must be an object")
    lock_id = raw.get("ID") or ""
    if not isinstance(lock_id, str):
        raise InvalidInput.of("Lock.ID", "must be a string")
    return LockSpec(lock_id, _duration(raw.get("TTL"), "Lock.TTL"), _duration(raw.get("LockDelay"), "Lock.LockDelay"))


def _duration(value: object, field: str) -> int:
    if value is None or value == "":
        return 0
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    try:
        return duration_ns(value)
    except DurationError as err:
        raise InvalidInput.of(field, str(err)) from None


def _size(items: dict[str, str]) -> None:
    if items_size(items) > MAX_ITEMS_BYTES:
        raise VariableRuleError("variables are limited to 64KiB in total size")


@contextlib.contextmanager
def _rules() -> Iterator[None]:
    """Nomad's validation errors are 400s with its message."""
    try:
        yield
    except VariableRuleError as err:
        raise InvalidInput.of("Variable", str(err)) from None
