"""The HCL2 functions Nomad job files use most: strings, collections, numbers, encodings.

``file()`` is not here: it needs the job file's directory and is handled by the evaluator.
Names and behaviour follow the HCL/cty standard library that Nomad's parser exposes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import re
import urllib.parse
import uuid
from collections.abc import Callable
from typing import Any

from app.wire.json import JsonObject

MAX_PAD = 1000  # widths and indents: the server must not build huge strings for a caller


class FunctionError(Exception):
    """A function was called with arguments it cannot use."""


def to_text(value: Any) -> str:
    """A value as HCL renders it inside a string template."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else repr(value)
    if isinstance(value, str):
        return value
    if value is None:
        raise FunctionError("cannot use null inside a string")
    raise FunctionError(f"cannot use a {'list' if isinstance(value, list) else 'map'} inside a string")


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    return to_text(value)


def _list(value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise FunctionError("expects a list")
    return value


def _map(value: Any) -> JsonObject:
    if not isinstance(value, dict):
        raise FunctionError("expects a map")
    return value


def _num(value: Any) -> int | float:
    if isinstance(value, bool):
        raise FunctionError("expects a number")
    if isinstance(value, int | float):
        return value
    return tonumber(value)


def tonumber(value: Any) -> int | float:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            raise FunctionError(f"cannot convert {value!r} to a number") from None
        return int(number) if number.is_integer() else number
    raise FunctionError("cannot convert to a number")


def tobool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if value == "true" or value == "false":
        return bool(value == "true")
    raise FunctionError(f"cannot convert {value!r} to a bool")


def _format(spec: Any, *args: Any) -> str:
    """cty's format: %s %d %f %v %q %%, with optional width/precision."""
    values = list(args)

    def one(match: re.Match[str]) -> str:
        flags, verb = match.group(1), match.group(2)
        if any(int(width) > MAX_PAD for width in re.findall(r"\d+", flags)):
            raise FunctionError(f"width or precision above {MAX_PAD}")
        if verb == "%":
            return "%"
        if not values:
            raise FunctionError("not enough arguments for the format string")
        value = values.pop(0)
        if verb in ("s", "v"):
            return ("%" + flags + "s") % _str(value) if not isinstance(value, list | dict) else json.dumps(value)
        if verb == "q":
            return json.dumps(_str(value))
        if verb == "d":
            return ("%" + flags + "d") % int(_num(value))
        if verb in ("f", "e", "g"):
            return ("%" + flags + verb) % float(_num(value))
        if verb in ("x", "X", "o", "b"):
            return format(int(_num(value)), flags + verb)
        if verb == "t":
            return to_text(tobool(value))
        raise FunctionError(f"unsupported verb %{verb}")

    return re.sub(r"%([-+ #0-9.]*)([a-zA-Z%])", one, _str(spec))


def _substr(text: Any, offset: Any, length: Any) -> str:
    value, start, count = _str(text), int(_num(offset)), int(_num(length))
    if start < 0:
        start = max(len(value) + start, 0)
    return value[start:] if count < 0 else value[start : start + count]


def _indent(spaces: Any, text: Any) -> str:
    count = int(_num(spaces))
    if not 0 <= count <= MAX_PAD:
        raise FunctionError(f"spaces must be between 0 and {MAX_PAD}")
    pad = " " * count
    lines = _str(text).split("\n")
    return "\n".join([lines[0], *[pad + line if line else line for line in lines[1:]]])


def _flatten(value: Any) -> list[Any]:
    out: list[Any] = []
    for item in _list(value):
        out.extend(_flatten(item) if isinstance(item, list) else [item])
    return out


def _lookup(mapping: Any, key: Any, *default: Any) -> Any:
    found = _map(mapping)
    if _str(key) in found:
        return found[_str(key)]
    if default:
        return default[0]
    raise FunctionError(f"no key {key!r} and no default")


def _merge(*maps: Any) -> JsonObject:
    out: JsonObject = {}
    for mapping in maps:
        if mapping is not None:
            out.update(_map(mapping))
    return out


def _element(items: Any, index: Any) -> Any:
    values = _list(items)
    if not values:
        raise FunctionError("cannot use element() on an empty list")
    return values[int(_num(index)) % len(values)]


def _index(items: Any, value: Any) -> int:
    try:
        return _list(items).index(value)
    except ValueError:
        raise FunctionError("item not found") from None


def _range(*args: Any) -> list[int | float]:
    numbers = [_num(a) for a in args]
    start: int | float
    stop: int | float
    step: int | float
    if len(numbers) == 1:
        start, stop, step = 0, numbers[0], 1 if numbers[0] >= 0 else -1
    elif len(numbers) == 2:
        start, stop, step = numbers[0], numbers[1], 1 if numbers[1] >= numbers[0] else -1
    else:
        start, stop, step = numbers
    if step == 0:
        raise FunctionError("step must not be zero")
    count = max(0, math.ceil((stop - start) / step))
    if count > 1024:
        raise FunctionError("more than 1024 numbers")
    return [start + i * step for i in range(count)]


def _slice(items: Any, start: Any, end: Any) -> list[Any]:
    values = _list(items)
    low, high = int(_num(start)), int(_num(end))
    if not 0 <= low <= high <= len(values):
        raise FunctionError("indexes out of range")
    return values[low:high]


def _coalesce(*values: Any) -> Any:
    for value in values:
        if value is not None and value != "":
            return value
    raise FunctionError("no non-null, non-empty argument")


def _zipmap(keys: Any, values: Any) -> JsonObject:
    names, items = _list(keys), _list(values)
    if len(names) != len(items):
        raise FunctionError("keys and values differ in length")
    return {_str(name): item for name, item in zip(names, items, strict=True)}


def _contains(items: Any, value: Any) -> bool:
    return value in _list(items)


def _length(value: Any) -> int:
    if isinstance(value, str | list | dict):
        return len(value)
    raise FunctionError("expects a string, list or map")


def _b64decode(text: Any) -> str:
    try:
        return base64.b64decode(_str(text), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        raise FunctionError("not valid base64 of UTF-8 text") from None


def _jsondecode(text: Any) -> Any:
    try:
        return json.loads(_str(text))
    except json.JSONDecodeError as exc:
        raise FunctionError(f"invalid JSON: {exc.msg}") from None


def _regex_replace(text: Any, pattern: Any, replacement: Any) -> str:
    try:
        return re.sub(_str(pattern), re.sub(r"\$\{?(\w+)\}?", r"\\g<\1>", _str(replacement)), _str(text))
    except re.error as exc:
        raise FunctionError(f"invalid pattern: {exc}") from None


def _regex(pattern: Any, text: Any) -> Any:
    try:
        match = re.search(_str(pattern), _str(text))
    except re.error as exc:
        raise FunctionError(f"invalid pattern: {exc}") from None
    if match is None:
        raise FunctionError("pattern did not match")
    if match.groupdict():
        return match.groupdict()
    if match.groups():
        return list(match.groups())
    return match.group(0)


def _minmax(pick: Callable[..., Any]) -> Callable[..., int | float]:
    def apply(*values: Any) -> int | float:
        if not values:
            raise FunctionError("needs at least one number")
        result: int | float = pick(_num(v) for v in values)
        return result

    return apply


def _hash(name: str) -> Callable[[Any], str]:
    return lambda text: hashlib.new(name, _str(text).encode()).hexdigest()


def _split(separator: Any, text: Any) -> list[str]:
    if _str(text) == "":
        return [""]
    return _str(text).split(_str(separator))


def _trim(text: Any, characters: Any) -> str:
    return _str(text).strip(_str(characters))


FUNCTIONS: dict[str, Callable[..., Any]] = {
    # strings
    "upper": lambda s: _str(s).upper(),
    "lower": lambda s: _str(s).lower(),
    "title": lambda s: re.sub(r"\b(\w)", lambda m: m.group(1).upper(), _str(s)),
    "trimspace": lambda s: _str(s).strip(),
    "trim": _trim,
    "trimprefix": lambda s, p: _str(s).removeprefix(_str(p)),
    "trimsuffix": lambda s, p: _str(s).removesuffix(_str(p)),
    "chomp": lambda s: _str(s).rstrip("\r\n"),
    "format": _format,
    "formatlist": lambda spec, *lists: [_format(spec, *row) for row in zip(*map(_list, lists), strict=False)],
    "join": lambda sep, *lists: _str(sep).join(_str(v) for items in lists for v in _list(items)),
    "split": _split,
    "replace": lambda s, old, new: _str(s).replace(_str(old), _str(new)),
    "regex_replace": _regex_replace,
    "regex": _regex,
    "substr": _substr,
    "strrev": lambda s: _str(s)[::-1],
    "strlen": lambda s: len(_str(s)),
    "indent": _indent,
    "startswith": lambda s, p: _str(s).startswith(_str(p)),
    "endswith": lambda s, p: _str(s).endswith(_str(p)),
    # collections
    "length": _length,
    "concat": lambda *lists: [v for items in lists for v in _list(items)],
    "contains": _contains,
    "distinct": lambda items: [
        json.loads(k) for k in dict.fromkeys(json.dumps(v, sort_keys=True) for v in _list(items))
    ],
    "flatten": _flatten,
    "keys": lambda m: sorted(_map(m).keys()),
    "values": lambda m: [_map(m)[k] for k in sorted(_map(m).keys())],
    "lookup": _lookup,
    "merge": _merge,
    "element": _element,
    "index": _index,
    "range": _range,
    "reverse": lambda items: list(reversed(_list(items))),
    "slice": _slice,
    "sort": lambda items: sorted(_str(v) for v in _list(items)),
    "coalesce": _coalesce,
    "coalescelist": lambda *lists: next((items for items in lists if _list(items)), []),
    "compact": lambda items: [v for v in _list(items) if v not in (None, "")],
    "zipmap": _zipmap,
    "tolist": lambda items: list(_list(items)),
    "toset": lambda items: [json.loads(k) for k in dict.fromkeys(json.dumps(v) for v in _list(items))],
    "tomap": lambda m: dict(_map(m)),
    "tostring": _str,
    "tonumber": tonumber,
    "tobool": tobool,
    # numbers
    "min": _minmax(min),
    "max": _minmax(max),
    "abs": lambda n: abs(_num(n)),
    "ceil": lambda n: math.ceil(_num(n)),
    "floor": lambda n: math.floor(_num(n)),
    "parseint": lambda s, base: int(_str(s), int(_num(base))),
    "signum": lambda n: (_num(n) > 0) - (_num(n) < 0),
    # encodings and hashes
    "base64encode": lambda s: base64.b64encode(_str(s).encode()).decode(),
    "base64decode": _b64decode,
    "jsonencode": lambda v: json.dumps(v, separators=(",", ":")),
    "jsondecode": _jsondecode,
    "urlencode": lambda s: urllib.parse.quote(_str(s), safe=""),
    "md5": _hash("md5"),
    "sha1": _hash("sha1"),
    "sha256": _hash("sha256"),
    "sha512": _hash("sha512"),
    "uuidv4": lambda: str(uuid.uuid4()),
}
