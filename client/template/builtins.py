"""Go's predefined template functions: comparison, logic, len, index and the fmt family
(print, printf, println) with Go's verbs and its %!verb(...) notes for mismatched operands."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from client.template.evaluator import Function, FunctionError, go_type
from client.template.values import MISSING, VarItem, go_str, truth


def _basic(value: Any) -> Any:
    """A VarItem compares as its value (lenient where Go would refuse a struct)."""
    return value.Value if isinstance(value, VarItem) else value


def _kind(value: Any) -> str:
    if value is None or value is MISSING:
        return "nil"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "other"


def eq(first: Any, *others: Any) -> bool:
    if not others:
        raise FunctionError("missing argument for comparison")
    left = _basic(first)
    for other in others:
        right = _basic(other)
        kinds = {_kind(left), _kind(right)}
        if "other" in kinds and left is not None and right is not None:
            raise FunctionError(f"non-comparable types {go_type(left)}: {go_type(right)}")
        if len(kinds) == 2 and "nil" not in kinds:
            raise FunctionError("incompatible types for comparison")
        if left == right:
            return True
    return False


def ne(first: Any, second: Any) -> bool:
    return not eq(first, second)


def _ordered(first: Any, second: Any) -> tuple[Any, Any]:
    left, right = _basic(first), _basic(second)
    kinds = {_kind(left), _kind(right)}
    if kinds - {"int", "float", "string"}:
        raise FunctionError("invalid type for comparison")
    if len(kinds) == 2:
        raise FunctionError("incompatible types for comparison")
    return left, right


def lt(first: Any, second: Any) -> bool:
    left, right = _ordered(first, second)
    return bool(left < right)


def le(first: Any, second: Any) -> bool:
    left, right = _ordered(first, second)
    return bool(left <= right)


def gt(first: Any, second: Any) -> bool:
    left, right = _ordered(first, second)
    return bool(left > right)


def ge(first: Any, second: Any) -> bool:
    left, right = _ordered(first, second)
    return bool(left >= right)


def not_(value: Any) -> bool:
    return not truth(value)


def length(value: Any) -> int:
    if isinstance(value, (str, list, tuple, Mapping)):
        return len(value)
    raise FunctionError(f"len of type {go_type(value)}")


def index(value: Any, *keys: Any) -> Any:
    for key in keys:
        if isinstance(value, Mapping):
            value = value.get(key, MISSING)
        elif isinstance(value, (list, tuple, str)):
            if not isinstance(key, int) or isinstance(key, bool):
                raise FunctionError(f"cannot index slice/array with type {go_type(key)}")
            if not 0 <= key < len(value):
                raise FunctionError(f"index out of range: {key}")
            value = value[key]
        else:
            raise FunctionError(f"can't index item of type {go_type(value)}")
    return value


def sprint(*values: Any) -> str:
    """Go's Sprint: a space between operands when neither is a string."""
    out: list[str] = []
    for i, value in enumerate(values):
        if i and not isinstance(value, str) and not isinstance(values[i - 1], str):
            out.append(" ")
        out.append(go_str(value))
    return "".join(out)


def sprintln(*values: Any) -> str:
    return " ".join(go_str(value) for value in values) + "\n"


_VERB = re.compile(r"%([-+# 0]*)(\d+)?(?:\.(\d*))?([a-zA-Z%])")


def sprintf(layout: str, *values: Any) -> str:
    """Go's Sprintf for the verbs templates use: %v %s %q %d %f %e %g %x %X %o %b %t %c %T %%."""
    out: list[str] = []
    rest = list(values)
    position = 0
    for match in _VERB.finditer(layout):
        out.append(layout[position : match.start()])
        position = match.end()
        flags, width, precision, verb = match.groups()
        if verb == "%":
            out.append("%")
            continue
        if not rest:
            out.append(f"%!{verb}(MISSING)")
            continue
        out.append(_format(rest.pop(0), flags, width, precision, verb))
    out.append(layout[position:])
    if rest:
        extra = ", ".join(f"{go_type(v)}={go_str(v)}" for v in rest)
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)


def _format(value: Any, flags: str, width: str | None, precision: str | None, verb: str) -> str:
    value = _basic(value)
    bad = f"%!{verb}({go_type(value)}={go_str(value)})"
    text: str
    if verb in "vs":
        text = go_str(value)
        if precision is not None and verb == "s":
            text = text[: int(precision or 0)]
    elif verb == "q":
        if not isinstance(value, str):
            return bad
        text = '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t") + '"'
    elif verb == "T":
        text = go_type(value)
    elif verb == "t":
        if not isinstance(value, bool):
            return bad
        text = go_str(value)
    elif verb in "dxXob" and isinstance(value, int) and not isinstance(value, bool):
        spec = {"d": "d", "x": "x", "X": "X", "o": "o", "b": "b"}[verb]
        text = format(value, ("+" if "+" in flags else "") + spec)
    elif verb in "xX" and isinstance(value, str):
        text = value.encode().hex()
        text = text.upper() if verb == "X" else text
    elif verb == "c" and isinstance(value, int) and not isinstance(value, bool):
        text = chr(value)
    elif verb in "feEgG" and isinstance(value, float):
        sign = "+" if "+" in flags else ""
        if verb in "gG" and precision is None:
            text = sign * (value >= 0) + go_str(value)
        else:
            text = format(value, f"{sign}.{precision or ('6' if precision is None else '0')}{verb}")
    else:
        return bad
    if width:
        size = int(width)
        if "-" in flags:
            text = text.ljust(size)
        elif "0" in flags and verb in "dfeEgGxXob":
            sign = text[0] if text[:1] in "+-" else ""
            text = sign + text[len(sign) :].rjust(size - len(sign), "0")
        else:
            text = text.rjust(size)
    return text


BUILTINS: dict[str, Function] = {
    "and": lambda *a: a[-1],  # evaluated lazily by the executor; listed so it parses
    "or": lambda *a: a[-1],
    "not": not_,
    "eq": eq,
    "ne": ne,
    "lt": lt,
    "le": le,
    "gt": gt,
    "ge": ge,
    "len": length,
    "index": index,
    "print": sprint,
    "printf": sprintf,
    "println": sprintln,
}
