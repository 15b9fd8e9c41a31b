"""Checks and conversions of single values of the agent configuration. Each returns the value in
the form its target reads, or raises ValueError saying what was expected."""

from __future__ import annotations

import re
from collections.abc import Callable

from app.jobspec.durations import SECOND, DurationError, duration_ns
from app.wire.json import JsonValue

Convert = Callable[[JsonValue], JsonValue]

# Nomad's log levels and the level corral's logging takes for each.
LOG_LEVELS = {"trace": "debug", "debug": "debug", "info": "info", "warn": "warning", "err": "error", "error": "error"}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")
_SIZE_UNITS = {"": 1, "b": 1, "k": 1000, "kb": 1000, "m": 1000**2, "mb": 1000**2, "g": 1000**3, "gb": 1000**3}
_SIZE_UNITS |= {"ki": 1024, "kib": 1024, "mi": 1024**2, "mib": 1024**2, "gi": 1024**3, "gib": 1024**3}


def string(value: JsonValue) -> JsonValue:
    if not isinstance(value, str):
        raise ValueError(f"must be a string, got {value!r}")
    return value


def nonempty(value: JsonValue) -> JsonValue:
    if not isinstance(value, str) or not value.strip():
        raise ValueError(f"must be a non-empty string, got {value!r}")
    return value


def absolute_path(value: JsonValue) -> JsonValue:
    if not isinstance(value, str) or not value.startswith("/"):
        raise ValueError(f"must be an absolute path, got {value!r}")
    return value


def boolean(value: JsonValue) -> JsonValue:
    # HCL files write true/false; JSON files of Nomad's sometimes quote them.
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if not isinstance(value, bool):
        raise ValueError(f"must be true or false, got {value!r}")
    return value


def integer(minimum: int) -> Convert:
    def check(value: JsonValue) -> JsonValue:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise ValueError(f"must be an integer of at least {minimum}, got {value!r}")
        return value

    return check


def number(value: JsonValue) -> JsonValue:
    if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
        raise ValueError(f"must be a positive number, got {value!r}")
    return float(value)


def percent(value: JsonValue) -> JsonValue:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 100:
        raise ValueError(f"must be a percentage between 0 and 100, got {value!r}")
    return float(value)


def seconds(value: JsonValue) -> JsonValue:
    """A Go duration ("30s", "1h30m"), as seconds; a bare number is taken as seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f'must be a duration like "30s" or "1h", got {value!r}')
    if isinstance(value, str):
        try:
            found = duration_ns(value.strip()) / SECOND
        except DurationError:
            raise ValueError(f'must be a duration like "30s" or "1h", got {value!r}') from None
    else:
        found = float(value)
    if found < 0:
        raise ValueError(f"must not be negative, got {value!r}")
    return found


def positive_seconds(value: JsonValue) -> JsonValue:
    found = seconds(value)
    if found == 0:
        raise ValueError(f"must be longer than 0, got {value!r}")
    return found


def size_bytes(value: JsonValue) -> JsonValue:
    """A size as Nomad's humanize.ParseBytes reads it ("1M", "512KiB", a bare number of bytes)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    found = _SIZE.match(value) if isinstance(value, str) else None
    unit = found.group(2).lower() if found else ""
    if found is None or unit not in _SIZE_UNITS:
        raise ValueError(f'must be a size like "1M" or "512KiB", got {value!r}')
    return int(float(found.group(1)) * _SIZE_UNITS[unit])


def log_level(value: JsonValue) -> JsonValue:
    if not isinstance(value, str) or value.lower() not in LOG_LEVELS:
        raise ValueError(f"must be one of TRACE, DEBUG, INFO, WARN, ERR, got {value!r}")
    return LOG_LEVELS[value.lower()]


def string_list(value: JsonValue) -> JsonValue:
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ValueError(f"must be a list of strings, got {value!r}")
    return value


def string_map(value: JsonValue) -> JsonValue:
    if not isinstance(value, dict) or not all(isinstance(item, str) for item in value.values()):
        raise ValueError(f"must be a map of strings, got {value!r}")
    return value


def scalar_map(value: JsonValue) -> JsonValue:
    """Nomad's client options: string values, though files often write numbers and booleans bare."""
    if not isinstance(value, dict) or any(isinstance(item, dict | list) or item is None for item in value.values()):
        raise ValueError(f"must be a map of strings, got {value!r}")
    return {key: str(item).lower() if isinstance(item, bool) else str(item) for key, item in value.items()}


def env_text(value: JsonValue) -> str:
    """How a converted value is written into its CORRAL_* variable."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(str(item) for item in value)
    return str(value)
