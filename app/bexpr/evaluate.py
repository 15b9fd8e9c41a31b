"""Evaluating a parsed filter against one JSON object (dicts, lists, strings, numbers, booleans,
None), with go-bexpr's semantics:

- A value written in the filter is text, coerced to the type of the field it meets: a boolean
  field takes Go's booleans (true/false/1/0/t/f...), an integer field Go's integers (also "0x1f"),
  a float field a float; a string field compares the text as written. Text that is not of the
  field's type is an error, as in Nomad.
- `contains` / `in` test a list's elements (each coerced to its own type), a map's keys, or a
  substring of a string; `is empty` a list, map or string; `matches` a string (RE2, unanchored).
- A name missing from the object itself is an error (Nomad's objects are structs: the field does
  not exist). A key missing further down (a map such as Meta, an index past a list's end) or a
  null on the way is "not present": `==`, `in`, `matches`, `is not empty` and `is not nil` are
  false there, their negations true, and `is empty` / `is nil` true.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from app.bexpr.syntax import BoolOp, Collection, FilterError, Match, Node, Not, Selector, parse

_ABSENT = object()
_GO_TRUE = frozenset({"1", "t", "T", "TRUE", "true", "True"})
_GO_FALSE = frozenset({"0", "f", "F", "FALSE", "false", "False"})
_GO_INT = re.compile(
    r"[+-]?(?:0[xX](?:_?[0-9a-fA-F])+|0[bB](?:_?[01])+|0[oO](?:_?[0-7])+|0(?:_?[0-7])*|[1-9](?:_?[0-9])*)"
)
_GO_FLOAT = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[iI][nN][fF](?:[iI][nN][iI][tT][yY])?|[nN][aA][nN])"
)
_INT64 = (-(2**63), 2**63 - 1)
NOT_PRESENT = {
    "==": False,
    "!=": True,
    "in": False,
    "not in": True,
    "is empty": True,
    "is not empty": False,
    "matches": False,
    "not matches": True,
    "is nil": True,
    "is not nil": False,
}


class FilterEvalError(FilterError):
    """The filter does not fit an object it met (a field that does not exist, text that is not
    a number for a number field...)."""


class _Syntax(ValueError):
    """Text that is not of the field's type (Go's strconv.ErrSyntax); `in` skips such elements."""


@dataclass(frozen=True)
class _Local:
    name: str
    path: tuple[str, ...] | None  # an element: its path from the object
    value: Any = None  # an index or a map key: the value itself


def _a(value: Any) -> str:
    kind = _kind(value)
    return f"an {kind}" if kind[0] in "aeiou" else f"a {kind}"


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, dict):
        return "map"
    return type(value).__name__


@functools.lru_cache(maxsize=4096)
def coerce_bool(raw: str) -> bool:
    if raw in _GO_TRUE:
        return True
    if raw in _GO_FALSE:
        return False
    raise _Syntax(f"{raw!r} is not a boolean (true or false)")


@functools.lru_cache(maxsize=4096)
def coerce_int(raw: str) -> int:
    if not _GO_INT.fullmatch(raw):
        raise _Syntax(f"{raw!r} is not an integer")
    sign, digits = (-1, raw[1:]) if raw[0] == "-" else (1, raw.lstrip("+"))
    digits = digits.replace("_", "")
    prefix = digits[:2].lower()
    if prefix in ("0x", "0b", "0o"):
        number = int(digits[2:], {"0x": 16, "0b": 2, "0o": 8}[prefix])
    elif len(digits) > 1 and digits[0] == "0":
        number = int(digits[1:], 8)
    else:
        number = int(digits)
    number *= sign
    if not _INT64[0] <= number <= _INT64[1]:
        raise FilterEvalError(f"{raw!r} is out of range for a 64-bit integer")
    return number


@functools.lru_cache(maxsize=4096)
def coerce_float(raw: str) -> float:
    if not _GO_FLOAT.fullmatch(raw):
        raise _Syntax(f"{raw!r} is not a number")
    return float(raw)


def _equal(raw: str, value: Any) -> bool:
    """Whether `raw`, coerced to the type of `value`, equals it; _Syntax when it cannot be."""
    if isinstance(value, str):
        return raw == value
    if isinstance(value, bool):
        return coerce_bool(raw) == value
    if isinstance(value, int):
        try:
            return coerce_int(raw) == value
        except _Syntax as err:
            # JSON cannot tell a float field holding a whole number from an integer field.
            try:
                number = coerce_float(raw)
            except _Syntax:
                raise err from None
            return math.isfinite(number) and number == value
    if isinstance(value, float):
        return coerce_float(raw) == value
    if isinstance(value, str):
        return raw == value
    raise FilterEvalError(f"cannot compare {_a(value)} with {raw!r}")


class Predicate:
    """A compiled filter: `matches(obj)` says whether an object passes."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tree = parse(text)

    def matches(self, obj: Mapping[str, Any]) -> bool:
        return _evaluate(self.tree, obj, ())

    def __call__(self, obj: Mapping[str, Any]) -> bool:
        return self.matches(obj)


def compile_filter(text: str) -> Predicate:
    """Parse `text` once; FilterSyntaxError says what is wrong and at which position."""
    return Predicate(text)


def _evaluate(node: Node, obj: Mapping[str, Any], local: tuple[_Local, ...]) -> bool:
    if isinstance(node, Match):
        return _match(node, obj, local)
    if isinstance(node, Not):
        return not _evaluate(node.operand, obj, local)
    if isinstance(node, BoolOp):
        if node.op == "and":
            return all(_evaluate(item, obj, local) for item in node.items)
        return any(_evaluate(item, obj, local) for item in node.items)
    return _collection(node, obj, local)


def _resolve(selector: Selector, obj: Mapping[str, Any], local: tuple[_Local, ...]) -> Any:
    """The value `selector` names, or _ABSENT."""
    path = selector.parts
    for binding in reversed(local) if local else ():
        if path and path[0] == binding.name:
            if binding.path is None:
                if len(path) > 1:
                    raise FilterEvalError(
                        f"{binding.name} is a {_kind(binding.value)} (an index or a key), so {selector} selects nothing"
                    )
                return binding.value
            path = binding.path + path[1:]
    current: Any = obj
    for depth, part in enumerate(path):
        if isinstance(current, dict):
            if part in current:
                current = current[part]
            elif depth == 0:
                raise FilterEvalError(f"{selector}: there is no field {part!r}")
            else:
                return _ABSENT
        elif isinstance(current, list):
            if not part.isdigit():
                where = ".".join(path[:depth])
                raise FilterEvalError(
                    f"{selector}: {where} is a list; select an element by number ({where}.0...) "
                    f"or test every element with any/all"
                )
            index = int(part)
            if index >= len(current):
                return _ABSENT
            current = current[index]
        elif current is None:
            return _ABSENT
        else:
            where = ".".join(path[:depth])
            raise FilterEvalError(f"{selector}: {where} is {_a(current)}, it has no field {part!r}")
    return current


def _match(node: Match, obj: Mapping[str, Any], local: tuple[_Local, ...]) -> bool:
    value = _resolve(node.selector, obj, local)
    if value is _ABSENT or value is None:
        return NOT_PRESENT[node.op]
    try:
        return _apply(node, value)
    except _Syntax as err:
        raise FilterEvalError(f"{node.selector} {node.op}: {err}") from None
    except FilterEvalError as err:
        raise FilterEvalError(f"{node.selector} {node.op}: {err.message}") from None


def _apply(node: Match, value: Any) -> bool:
    op, raw = node.op, node.value.raw if node.value is not None else ""
    if op in ("==", "!="):
        return _equal(raw, value) == (op == "==")
    if op in ("in", "not in"):
        return _contains(raw, value) == (op == "in")
    if op in ("is empty", "is not empty"):
        if not isinstance(value, str | list | dict):
            raise FilterEvalError(f"{_a(value)} cannot be empty; 'is empty' tests lists, maps and strings")
        return (len(value) == 0) == (op == "is empty")
    if op in ("is nil", "is not nil"):
        if not isinstance(value, list | dict):
            raise FilterEvalError(f"{_a(value)} cannot be nil; 'is nil' tests lists and maps")
        return op == "is not nil"
    if not isinstance(value, str):
        raise FilterEvalError(f"{_a(value)} cannot be matched; 'matches' tests strings")
    assert node.value is not None and node.value.pattern is not None
    return (node.value.pattern.search(value) is not None) == (op == "matches")


def _contains(raw: str, value: Any) -> bool:
    if isinstance(value, dict):
        return raw in value
    if isinstance(value, str):
        return raw in value
    if isinstance(value, list):
        for item in value:
            if isinstance(item, list | dict):
                raise FilterEvalError(f"cannot look for {raw!r} among {_kind(item)}s; use any/all")
            if item is None:
                continue
            try:
                if _equal(raw, item):
                    return True
            except _Syntax:
                continue  # as go-bexpr: an element of another type cannot be equal
        return False
    raise FilterEvalError(f"{_a(value)} cannot contain anything; 'contains' tests lists, maps and strings")


def _collection(node: Collection, obj: Mapping[str, Any], local: tuple[_Local, ...]) -> bool:
    found = _resolve(node.selector, obj, local)
    if found is _ABSENT or found is None:
        return node.op == "all"
    path = _full_path(node.selector, local)
    steps: list[tuple[_Local, ...]]
    if isinstance(found, list):
        steps = [_bindings(node, i, None if path is None else (*path, str(i)), item) for i, item in enumerate(found)]
    elif isinstance(found, dict):
        steps = [_bindings(node, k, None if path is None else (*path, k), v, is_map=True) for k, v in found.items()]
    else:
        raise FilterEvalError(f"{node.selector} is {_a(found)}, not a list or a map ({node.op} needs one)")

    def test(extra: tuple[_Local, ...]) -> bool:
        return _evaluate(node.inner, obj, (*local, *extra))

    if node.op == "any":
        return any(test(extra) for extra in steps)
    return all(test(extra) for extra in steps)


def _full_path(selector: Selector, local: tuple[_Local, ...]) -> tuple[str, ...] | None:
    path = selector.parts
    for binding in reversed(local):
        if path and path[0] == binding.name:
            if binding.path is None:
                return None
            path = binding.path + path[1:]
    return path


def _bindings(
    node: Collection, key: Any, path: tuple[str, ...] | None, element: Any, *, is_map: bool = False
) -> tuple[_Local, ...]:
    """The names an iteration step binds: for a list the index and the element, for a map the
    key and the value; the single-name form binds the element of a list but the key of a map."""

    def element_binding(name: str) -> _Local:
        return _Local(name, path) if path is not None else _Local(name, None, element)

    out: list[_Local] = []
    if node.default is not None:
        out.append(_Local(node.default, None, key) if is_map else element_binding(node.default))
    if node.index is not None:
        out.append(_Local(node.index, None, key))
    if node.value is not None:
        out.append(element_binding(node.value))
    return tuple(out)
