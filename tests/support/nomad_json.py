"""Does a served JSON value decode into a struct of Nomad's API package, key by key and type by
type? The Go types are those of nomad_api_types.py; what each one accepts from JSON is what
Go's encoding/json (and time.Time's decoder) accept, made strict where Nomad's own JSON is:

- ``*T``, ``[]T``, ``map[K]V``, ``any`` and ``error``: null is accepted (Go's nil);
- ``string``, ``bool``, numbers, ``time.Time`` and structs held by value: never null (Nomad's
  encoder never sends null for them, though Go would decode it as a no-op);
- ``time.Time``: an RFC 3339 string (Nomad's zero time is ``0001-01-01T00:00:00Z``);
- ``time.Duration`` and the integer kinds: a JSON integer (unsigned: not negative);
- ``[]byte``: a base64 string; ``error``: only null (Go cannot decode into an interface);
- a struct: an object whose keys of that struct hold values of their types; keys the struct
  lacks are ignored, as Go ignores them (the key lists of nomad_fields.py check those).

``problems`` answers a list of "where: what" strings, empty when the value decodes.
"""

from __future__ import annotations

import re
from typing import Any

from tests.support.nomad_api_types import ALIASES, STRUCTS

RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")
INTEGERS = {"int", "int8", "int16", "int32", "int64", "time.Duration"}
UNSIGNED = {"uint", "uint8", "uint16", "uint32", "uint64"}
FLOATS = {"float32", "float64"}
ANY = {"any", "interface{}"}


def problems(value: Any, go_type: str, where: str) -> list[str]:
    """Why ``value`` would not decode into (or does not have Nomad's form for) ``go_type``."""
    if go_type.startswith("*"):
        return [] if value is None else problems(value, go_type[1:], where)
    if go_type in ANY:
        return []
    if go_type == "error":
        return [] if value is None else [f"{where}: {value!r} cannot decode into an error"]
    if go_type == "[]byte":
        return [] if value is None or isinstance(value, str) else [f"{where}: {value!r} is not base64 text"]
    if go_type.startswith("[]"):
        return _list(value, go_type[2:], where)
    if go_type.startswith("map["):
        return _map(value, go_type, where)
    if go_type in ALIASES:
        return problems(value, ALIASES[go_type], where)
    if go_type in STRUCTS:
        return struct_problems(value, go_type, where)
    return _scalar(value, go_type, where)


def struct_problems(value: Any, name: str, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is not an object (api.{name})"]
    found: list[str] = []
    for key, go_type in STRUCTS[name].items():
        if key in value:
            found += problems(value[key], go_type, f"{where}.{key}")
    return found


def _list(value: Any, item: str, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list):
        return [f"{where}: {value!r} is not an array"]
    return [p for i, v in enumerate(value) for p in problems(v, item, f"{where}[{i}]")]


def _map(value: Any, go_type: str, where: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, dict):
        return [f"{where}: {value!r} is not an object ({go_type})"]
    item = _map_value_type(go_type)
    return [p for k, v in value.items() for p in problems(v, item, f"{where}[{k!r}]")]


def _map_value_type(go_type: str) -> str:
    """The V of map[K]V (K is a name here, never a nested type)."""
    return go_type[go_type.index("]") + 1 :]


def _scalar(value: Any, go_type: str, where: str) -> list[str]:
    wrong = [f"{where}: {value!r} is not a {go_type}"]
    if go_type == "string":
        return [] if isinstance(value, str) else wrong
    if go_type == "bool":
        return [] if isinstance(value, bool) else wrong
    if go_type == "time.Time":
        return (
            [] if isinstance(value, str) and RFC3339.match(value) else [f"{where}: {value!r} is not an RFC 3339 time"]
        )
    if isinstance(value, bool):
        return wrong
    if go_type in INTEGERS:
        return [] if isinstance(value, int) else wrong
    if go_type in UNSIGNED:
        return [] if isinstance(value, int) and value >= 0 else wrong
    if go_type in FLOATS:
        return [] if isinstance(value, int | float) else wrong
    raise AssertionError(f"{where}: no rule for the Go type {go_type!r}")
