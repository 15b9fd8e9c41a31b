"""Query-string and body parsing shared by the blueprints; bad values name their parameter."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from flask import request

from app.constants import DEFAULT_NAMESPACE
from app.errors import InvalidInput
from app.jobspec import JobSpecError, parse_duration

NANOS = 1_000_000_000
DEFAULT_WAIT_S = 300.0


def namespace(*, allow_wildcard: bool) -> str | None:
    """The ?namespace= value; None means every namespace ('*')."""
    value = request.args.get("namespace") or DEFAULT_NAMESPACE
    if value == "*":
        if not allow_wildcard:
            raise InvalidInput.of("namespace", "'*' is only allowed on list endpoints")
        return None
    return value


def uuid_value(value: str, field: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise InvalidInput.of(field, f"must be a UUID, got {value!r}") from None


def integer_arg(name: str, *, minimum: int = 0) -> int | None:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput.of(name, f"must be an integer, got {raw!r}") from None
    if value < minimum:
        raise InvalidInput.of(name, f"must be at least {minimum}, got {value}")
    return value


def bool_arg(name: str) -> bool:
    raw = request.args.get(name)
    if raw is None or raw == "":
        return False
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise InvalidInput.of(name, f"must be true or false, got {raw!r}")


def prefix_arg() -> str | None:
    return request.args.get("prefix") or None


def id_prefix_arg() -> str | None:
    """A UUID prefix: hex digits and dashes only, so it cannot smuggle LIKE wildcards."""
    prefix = prefix_arg()
    if prefix is not None and any(c not in "0123456789abcdefABCDEF-" for c in prefix):
        raise InvalidInput.of("prefix", f"must be the start of a UUID (hex digits and '-'), got {prefix!r}")
    return prefix


@dataclass(frozen=True)
class BlockingParams:
    index: int | None
    wait_s: float


def blocking_params(max_wait_s: float) -> BlockingParams:
    index = integer_arg("index")
    raw_wait = request.args.get("wait")
    wait_s = DEFAULT_WAIT_S
    if raw_wait:
        try:
            wait_s = parse_duration(raw_wait, "wait") / NANOS
        except JobSpecError as err:
            raise InvalidInput.of("wait", f"must be a duration like '30s' or '5m', got {raw_wait!r}") from err
    return BlockingParams(index=index if index else None, wait_s=min(wait_s, max_wait_s))


def json_body() -> dict[str, Any]:
    body = request.get_json(silent=True)
    if body is None:
        raise InvalidInput.of("body", "must be a JSON object (is Content-Type application/json and the JSON valid?)")
    if not isinstance(body, dict):
        raise InvalidInput.of("body", f"must be a JSON object, got {type(body).__name__}")
    return body


def no_filter() -> None:
    """Refuse ?filter= rather than silently return unfiltered results."""
    if request.args.get("filter"):
        raise InvalidInput.of("filter", "filter expressions are not supported yet; use job, status and prefix")
