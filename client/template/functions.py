"""The consul-template functions Nomad offers for its own provider: env, the nomadVar* and
nomadService* lookups (from a `Data` the caller provides), and the string, JSON, encoding
and time helpers."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Protocol

from client.template.errors import MissingDependency
from client.template.evaluator import Function, FunctionError
from client.template.values import MISSING, Service, ServiceSnippet, VarItem, VarItems, VarMeta, go_str


class Data(Protocol):
    """Where the nomad* functions read from: the renderer's cache of what it watches."""

    def variable(self, path: str) -> Mapping[str, str] | None:
        """A variable's items, or None when it does not exist."""

    def variables(self, prefix: str) -> list[VarMeta]: ...

    def service(self, name: str) -> list[Service]: ...

    def services(self) -> list[ServiceSnippet]: ...


def _json_ready(value: Any) -> Any:
    if isinstance(value, VarItem):
        return value.Value
    if isinstance(value, Mapping):
        return {str(k): _json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_ready(v) for v in value]
    if value is MISSING:
        return None
    if hasattr(value, "__dataclass_fields__"):
        return {name: _json_ready(getattr(value, name)) for name in value.__dataclass_fields__}
    return value


def to_json(value: Any) -> str:
    return json.dumps(_json_ready(value), sort_keys=True, separators=(",", ":"))


def to_json_pretty(value: Any) -> str:
    return json.dumps(_json_ready(value), sort_keys=True, indent=2)


def parse_json(text: Any) -> Any:
    try:
        # Go decodes every JSON number into interface{} as a float64.
        return json.loads(str(text), parse_int=float)
    except json.JSONDecodeError as err:
        raise FunctionError(f"invalid JSON: {err}") from None


def split(separator: str, text: Any) -> list[str]:
    text = go_str(text)
    if not text:
        return []  # consul-template: splitting "" gives no items
    return text.split(separator) if separator else list(text)


def join(separator: str, items: Any) -> str:
    if not isinstance(items, (list, tuple)):
        raise FunctionError(f"join: expected a list, got {go_str(items)}")
    return separator.join(go_str(item) for item in items)


def contains(needle: Any, haystack: Any) -> bool:
    """consul-template's contains: a substring of a string, or an element of a list."""
    if isinstance(haystack, (list, tuple)):
        return any(go_str(item) == go_str(needle) for item in haystack)
    return go_str(needle) in go_str(haystack)


def replace_all(old: str, new: str, text: Any) -> str:
    return go_str(text).replace(old, new)


def base64_encode(text: Any) -> str:
    return base64.b64encode(go_str(text).encode()).decode()


def base64_decode(text: Any) -> str:
    try:
        return base64.b64decode(go_str(text).encode(), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as err:
        raise FunctionError(f"argument to base64Decode is not base64: {err}") from None


def parse_int(text: Any) -> int:
    try:
        return int(go_str(text).strip(), 0)
    except ValueError:
        raise FunctionError(f'parseInt: invalid syntax "{go_str(text)}"') from None


def parse_float(text: Any) -> float:
    try:
        return float(go_str(text).strip())
    except ValueError:
        raise FunctionError(f'parseFloat: invalid syntax "{go_str(text)}"') from None


def parse_bool(text: Any) -> bool:
    value = go_str(text).strip()
    if value in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if value in ("0", "f", "F", "false", "FALSE", "False", ""):
        return False
    raise FunctionError(f'parseBool: invalid syntax "{value}"')


# Go reference-time layout elements and their strftime equivalents, longest first.
_LAYOUT = (
    ("January", "%B"),
    ("Monday", "%A"),
    ("Z07:00", "\0tzcolon"),
    ("-07:00", "\0colon"),
    ("-0700", "%z"),
    ("2006", "%Y"),
    ("Jan", "%b"),
    ("Mon", "%a"),
    ("MST", "%Z"),
    ("01", "%m"),
    ("02", "%d"),
    ("15", "%H"),
    ("03", "%I"),
    ("04", "%M"),
    ("05", "%S"),
    ("PM", "%p"),
    ("06", "%y"),
    (".000000", ".%f"),
)
RFC3339 = "2006-01-02T15:04:05Z07:00"


def go_time_format(moment: datetime, layout: str) -> str:
    """Formats with a Go layout (the reference time Mon Jan 2 15:04:05 MST 2006)."""
    out: list[str] = []
    i = 0
    while i < len(layout):
        for element, directive in _LAYOUT:
            if layout.startswith(element, i):
                out.append(_directive(moment, directive))
                i += len(element)
                break
        else:
            out.append(layout[i].replace("%", "%%"))
            i += 1
    return moment.strftime("".join(out))


def _directive(moment: datetime, directive: str) -> str:
    if not directive.startswith("\0"):
        return directive
    offset = moment.strftime("%z")
    if directive == "\0tzcolon" and offset in ("+0000", ""):
        return "Z"
    return f"{offset[:3]}:{offset[3:]}" if offset else "Z"


def make_timestamp(now: Callable[[], datetime]) -> Function:
    def timestamp(layout: str = RFC3339) -> str:
        moment = now().astimezone(UTC)
        if layout == "unix":
            return str(int(moment.timestamp()))
        return go_time_format(moment, layout)

    return timestamp


def nomad_functions(data: Data) -> dict[str, Function]:
    def nomad_var(path: str) -> VarItems:
        items = data.variable(_plain_path(path))
        if items is None:
            raise MissingDependency(f"nomad.var.block({path})")
        return VarItems.of(items)

    def nomad_var_list(prefix: str = "") -> list[VarMeta]:
        return data.variables(_plain_path(prefix))

    def nomad_var_exists(path: str) -> bool:
        return data.variable(_plain_path(path)) is not None

    def nomad_service(name: str) -> list[Service]:
        return data.service(name)

    def nomad_services() -> list[ServiceSnippet]:
        return data.services()

    return {
        "nomadVar": nomad_var,
        "nomadVarList": nomad_var_list,
        "nomadVarExists": nomad_var_exists,
        "nomadService": nomad_service,
        "nomadServices": nomad_services,
    }


def _plain_path(path: Any) -> str:
    if not isinstance(path, str):
        raise FunctionError(f"expected a variable path string, got {go_str(path)}")
    if "@" in path:
        raise FunctionError(f"{path!r}: the @namespace.region suffix is not supported")
    return path.strip("/")


def standard_functions(env: Mapping[str, str], now: Callable[[], datetime]) -> dict[str, Function]:
    return {
        "env": lambda name: env.get(str(name), ""),
        "toJSON": to_json,
        "toJSONPretty": to_json_pretty,
        "parseJSON": parse_json,
        "split": split,
        "join": join,
        "timestamp": make_timestamp(now),
        "toLower": lambda text: go_str(text).lower(),
        "toUpper": lambda text: go_str(text).upper(),
        "trimSpace": lambda text: go_str(text).strip(" \t\n\r\v\f"),
        "contains": contains,
        "replaceAll": replace_all,
        "base64Encode": base64_encode,
        "base64Decode": base64_decode,
        "parseInt": parse_int,
        "parseFloat": parse_float,
        "parseBool": parse_bool,
    }


NOMAD_FUNCTIONS = ("nomadVar", "nomadVarList", "nomadVarExists", "nomadService", "nomadServices")
FUNCTION_NAMES = frozenset([*standard_functions({}, lambda: datetime.now(UTC)), *NOMAD_FUNCTIONS])
