"""Go-style duration parsing; Nomad's API carries durations as integer nanoseconds."""

from __future__ import annotations

import re

from app.jobspec.errors import JobSpecError, json_type, quote

NANOSECOND = 1
MICROSECOND = 1_000 * NANOSECOND
MILLISECOND = 1_000 * MICROSECOND
SECOND = 1_000 * MILLISECOND
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

# Go's time.Duration is an int64; anything larger cannot round-trip through Nomad.
MAX_DURATION = 2**63 - 1

_UNITS = {
    "ns": NANOSECOND,
    "us": MICROSECOND,
    "\u00b5s": MICROSECOND,  # micro sign, accepted by Go
    "\u03bcs": MICROSECOND,  # Greek mu, accepted by Go
    "ms": MILLISECOND,
    "s": SECOND,
    "m": MINUTE,
    "h": HOUR,
}
_COMPONENT = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_EXPECTED = 'a duration like "30s" or "1m30s", or integer nanoseconds'


class DurationError(ValueError):
    """A value is not a usable duration; the message is a complete sentence fragment."""


def duration_ns(value: object) -> int:
    """Convert integer nanoseconds or a Go duration string to non-negative nanoseconds."""
    # bool is an int subclass; True must not silently become one nanosecond.
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise DurationError(f"must be {_EXPECTED}, got {json_type(value)}")
    nanos = value if isinstance(value, int) else _parse_go_duration(value)
    if nanos < 0:
        raise DurationError(f"must not be negative, got {_show(value)}")
    if nanos > MAX_DURATION:
        raise DurationError(f"is too large, got {_show(value)}")
    return nanos


def parse_duration(value: object, field: str) -> int:
    """Public wrapper of :func:`duration_ns` that reports problems against ``field``."""
    try:
        return duration_ns(value)
    except DurationError as exc:
        raise JobSpecError.single(field, str(exc)) from None


def format_duration(nanos: int) -> str:
    """Render nanoseconds compactly (``90s`` -> ``"1m30s"``) for error messages."""
    if nanos == 0:
        return "0s"
    parts: list[str] = []
    remainder = nanos
    for unit, size in (("h", HOUR), ("m", MINUTE), ("s", SECOND), ("ms", MILLISECOND)):
        count, remainder = divmod(remainder, size)
        if count:
            parts.append(f"{count}{unit}")
    if remainder:
        parts.append(f"{remainder}ns")
    return "".join(parts)


def _show(value: int | str) -> str:
    return quote(value) if isinstance(value, str) else str(value)


def _parse_go_duration(text: str) -> int:
    invalid = DurationError(f"must be {_EXPECTED}, got {quote(text)}")
    body = text
    sign = 1
    if body[:1] in ("+", "-"):
        sign = -1 if body[0] == "-" else 1
        body = body[1:]
    if body == "0":
        return 0
    if not body:
        raise invalid
    total = 0
    position = 0
    while position < len(body):
        match = _COMPONENT.match(body, position)
        if match is None:
            raise invalid
        whole, fraction, unit = match.group(1), match.group(2) or "", match.group(3)
        if not whole and not fraction:
            raise invalid
        size = _UNITS[unit]
        # Integer arithmetic keeps "1.1s" exact where float maths would drift; Go truncates
        # sub-nanosecond remainders the same way.
        total += int(whole or "0") * size + int(fraction or "0") * size // 10 ** len(fraction)
        position = match.end()
    return sign * total
