"""Query-string and body parsing shared by the blueprints; bad values name their parameter."""

from __future__ import annotations

import json
import math
import uuid
from dataclasses import dataclass

from flask import request

from app.jobspec import JobSpecError, parse_duration
from app.jobspec.errors import join_path, json_type
from app.values.constants import DEFAULT_NAMESPACE
from app.values.errors import FieldProblem, InvalidInput
from app.wire.json import JsonObject, JsonValue

NANOS = 1_000_000_000
DEFAULT_WAIT_S = 300.0
# Postgres BIGINT: indexes and tokens beyond it cannot name anything in the database.
MAX_BIGINT = 2**63 - 1
MAX_PER_PAGE = 2**31 - 1
# A Nomad job nests a dozen levels at most; far deeper JSON is an attack, not a job.
MAX_BODY_DEPTH = 64
NUL = "\x00"


def arg(name: str) -> str | None:
    """A query parameter; a NUL character (which no database text can hold) is a 400."""
    value = request.args.get(name)
    if value is not None and NUL in value:
        raise InvalidInput.of(name, "must not contain NUL characters (\\u0000)")
    return value


def path_value(value: str, field: str) -> str:
    """An ID taken from the URL path, checked like a query parameter."""
    if NUL in value:
        raise InvalidInput.of(field, "must not contain NUL characters (\\u0000)")
    return value


def namespace(*, allow_wildcard: bool) -> str | None:
    """The ?namespace= value; None means every namespace ('*')."""
    value = arg("namespace") or DEFAULT_NAMESPACE
    if value == "*":
        if not allow_wildcard:
            raise InvalidInput.of("namespace", "'*' is only allowed on list endpoints")
        return None
    return value


def uuid_value(value: str, field: str) -> uuid.UUID:
    try:
        return uuid.UUID(path_value(value, field))
    except ValueError:
        raise InvalidInput.of(field, f"must be a UUID, got {value!r}") from None


def integer_arg(name: str, *, minimum: int = 0, maximum: int = MAX_BIGINT) -> int | None:
    raw = arg(name)
    if raw is None or raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput.of(name, f"must be an integer, got {raw!r}") from None
    if value < minimum:
        raise InvalidInput.of(name, f"must be at least {minimum}, got {value}")
    if value > maximum:
        raise InvalidInput.of(name, f"must be at most {maximum}, got {value}")
    return value


def bool_arg(name: str, default: bool = False) -> bool:
    raw = arg(name)
    if raw is None or raw == "":
        return default
    if raw.lower() in ("true", "1", "yes"):
        return True
    if raw.lower() in ("false", "0", "no"):
        return False
    raise InvalidInput.of(name, f"must be true or false, got {raw!r}")


def prefix_arg() -> str | None:
    return arg("prefix") or None


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
    raw_wait = arg("wait")
    wait_s = DEFAULT_WAIT_S
    if raw_wait:
        try:
            wait_s = parse_duration(raw_wait, "wait") / NANOS
        except JobSpecError as err:
            raise InvalidInput.of("wait", f"must be a duration like '30s' or '5m', got {raw_wait!r}") from err
    return BlockingParams(index=index if index else None, wait_s=min(wait_s, max_wait_s))


class _NonFinite(float):
    """What NaN, Infinity or an overflowing number parse to, so the walk can name their path."""


def _non_finite(text: str) -> float:
    return _NonFinite("nan")


def _float(text: str) -> float:
    value = float(text)
    return value if math.isfinite(value) else _NonFinite("nan")


def json_body() -> JsonObject:
    """The request body as a JSON object, whatever its Content-Type (Nomad's Go client sends
    none). NUL characters, NaN/Infinity and absurd nesting are refused with the path they are at."""
    body = _parsed(request.get_data(cache=True))
    if not isinstance(body, dict):
        raise InvalidInput.of("body", f"must be a JSON object, got {json_type(body)}")
    problems = _check_values(body)
    if problems:
        raise InvalidInput(problems)
    checked: JsonObject = body
    return checked


def peek_json_body() -> JsonValue:
    """The body parsed as json_body() parses it, for a look before the route reads it (the ACL
    check, node re-registration); None when it is not JSON, however it fails (too deep, bad
    UTF-8, not JSON at all): the route's own json_body() then refuses it with a 400."""
    raw = request.get_data(cache=True)  # a body that cannot be read (too slow, broken) fails here
    try:
        return _parsed(raw)
    except InvalidInput:
        return None


def _parsed(raw: bytes) -> JsonValue:
    """The one place a request body becomes JSON. Too deep a nesting exhausts the parser's
    recursion (RecursionError, not a ValueError) long before any limit of ours can apply."""
    try:
        found: JsonValue = json.loads(raw, parse_constant=_non_finite, parse_float=_float)
        return found
    except RecursionError:
        raise InvalidInput.of("body", f"is nested too deeply (at most {MAX_BODY_DEPTH} levels)") from None
    except ValueError as err:  # JSONDecodeError, bad UTF-8, integers of more than 4300 digits
        raise InvalidInput.of("body", f"must be valid JSON: {err}") from None


def optional_json_body() -> JsonObject:
    """json_body() for routes whose body may be left out: an empty (or all-whitespace) body is
    `{}`; anything else must be a valid JSON object, as for json_body()."""
    return json_body() if request.get_data(cache=True).strip() else {}


def _check_values(body: JsonObject) -> list[FieldProblem]:
    """Walk the parsed body without recursion, collecting what no part of corral can store."""
    problems: list[FieldProblem] = []
    stack: list[tuple[JsonValue, tuple[str | int, ...]]] = [(body, ())]
    while stack and len(problems) < 20:
        value, location = stack.pop()
        if len(location) > MAX_BODY_DEPTH:
            return [FieldProblem(_field(location), f"is nested too deeply (at most {MAX_BODY_DEPTH} levels)")]
        if isinstance(value, dict):
            for key, item in value.items():
                problem = _text_problem(key)
                if problem:
                    problems.append(FieldProblem(_field(location), f"keys {problem}"))
                else:
                    stack.append((item, (*location, key)))
        elif isinstance(value, list):
            stack.extend((item, (*location, index)) for index, item in enumerate(value))
        elif isinstance(value, str) and (problem := _text_problem(value)):
            problems.append(FieldProblem(_field(location), problem))
        elif isinstance(value, _NonFinite):
            problems.append(FieldProblem(_field(location), "must be a finite number (NaN and Infinity are not JSON)"))
    return problems


def _text_problem(text: str) -> str | None:
    if NUL in text:
        return "must not contain NUL characters (\\u0000)"
    try:
        text.encode()
    except UnicodeEncodeError:
        return "must be valid Unicode (a lone surrogate such as \\ud800 is not)"
    return None


def _field(location: tuple[str | int, ...]) -> str:
    return join_path("", location).lstrip(".") or "body"
