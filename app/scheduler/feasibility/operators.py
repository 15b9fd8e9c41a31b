"""Nomad's constraint and affinity operands over already-resolved target values."""

from __future__ import annotations

import operator
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from app.scheduler.feasibility import versions

_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?")

# Operands enforced elsewhere (they depend on where other allocations are, not on one node).
PLACEMENT_OPERANDS = frozenset({"distinct_hosts", "distinct_property"})


def check(operand: str, left: str | None, right: str | None) -> bool:
    """left/right are None when the target is not set on the node."""
    if operand in PLACEMENT_OPERANDS:
        return True
    if operand == "is_set":
        return left is not None
    if operand == "is_not_set":
        return left is None
    if operand in ("!=", "not"):
        return left != right  # Nomad: a missing attribute is "not equal" to anything set
    if left is None or right is None:
        return False
    binary = _BINARY.get(operand)
    return binary is not None and binary(left, right)


_ORDERINGS: dict[str, Callable[[Any, Any], Any]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}


def _ordered(op: str) -> Callable[[str, str], bool]:
    """Numeric when both sides parse as numbers, otherwise lexical."""
    ordering = _ORDERINGS[op]

    def compare(left: str, right: str) -> bool:
        if _NUMBER.fullmatch(left) and _NUMBER.fullmatch(right):
            return bool(ordering(float(left), float(right)))
        return bool(ordering(left, right))

    return compare


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _regexp(left: str, right: str) -> bool:
    pattern = _regex(right)
    return pattern is not None and pattern.search(left) is not None


def _items(text: str) -> set[str]:
    return {item.strip() for item in text.split(",")}


_BINARY: dict[str, Callable[[str, str], bool]] = {
    "=": lambda a, b: a == b,
    "==": lambda a, b: a == b,
    "is": lambda a, b: a == b,
    "<": _ordered("<"),
    "<=": _ordered("<="),
    ">": _ordered(">"),
    ">=": _ordered(">="),
    "regexp": _regexp,
    "version": lambda a, b: versions.matches(a, b),
    "semver": lambda a, b: versions.matches(a, b, semver=True),
    "set_contains": lambda a, b: _items(b) <= _items(a),
    "set_contains_all": lambda a, b: _items(b) <= _items(a),
    "set_contains_any": lambda a, b: bool(_items(b) & _items(a)),
}
