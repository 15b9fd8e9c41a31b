"""Nomad's rules for a variable: its path, the size of its items, and its lock's TTL and delay
(nomad/structs/variables.go)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

SECOND = 1_000_000_000
MAX_ITEMS_BYTES = 65536  # Nomad's maxVariableSize: keys and values, unencrypted
MIN_LOCK_TTL_NS = 10 * SECOND
MAX_LOCK_TTL_NS = 24 * 3600 * SECOND
DEFAULT_LOCK_TTL_NS = 15 * SECOND
DEFAULT_LOCK_DELAY_NS = 15 * SECOND
# RFC 3986 URL-safe characters that do not clash with '@' and '.' in template functions.
_PATH = re.compile(r"^[a-zA-Z0-9\-_~/]{1,128}$")


class VariableRuleError(ValueError):
    """The variable breaks one of Nomad's rules; the message is Nomad's."""


def check_path(path: str) -> None:
    """Nomad's validatePath: the characters and length, and what may live under nomad/."""
    if not path:
        raise VariableRuleError("variable requires path")
    if not _PATH.fullmatch(path):
        raise VariableRuleError(f"invalid path {path!r}")
    parts = path.split("/")
    if parts[0] != "nomad":
        return
    if len(parts) == 1:
        raise VariableRuleError(
            '"nomad" is a reserved top-level directory path, but you may write variables to "nomad/jobs", '
            '"nomad/job-templates", or below'
        )
    if parts[1] == "jobs":
        return
    if parts[1] == "job-templates":
        if len(parts) == 3:
            return
        raise VariableRuleError(
            '"nomad/job-templates" is a reserved directory path, but you may write variables at the level below '
            'it, for example, "nomad/job-templates/template-name"'
        )
    raise VariableRuleError(
        'only paths at "nomad/jobs" or "nomad/job-templates" and below are valid paths under the top-level '
        '"nomad" directory'
    )


def items_size(items: Mapping[str, str]) -> int:
    """Nomad's VariableItems.Size: the bytes of every key and value."""
    return sum(len(key.encode()) + len(value.encode()) for key, value in items.items())


def check_items(items: Mapping[str, str]) -> None:
    if not items:
        raise VariableRuleError("empty variables are invalid")
    if items_size(items) > MAX_ITEMS_BYTES:
        raise VariableRuleError("variables are limited to 64KiB in total size")


@dataclass(frozen=True)
class LockSpec:
    """A lock as requested: the holder's ID (empty: a new lock), TTL and delay in nanoseconds
    (0: Nomad's default)."""

    id: str = ""
    ttl_ns: int = 0
    delay_ns: int = 0

    def canonical(self, new_id: str) -> LockSpec:
        """Nomad's VariableLock.Canonicalize: an ID and the default TTL and delay."""
        return LockSpec(self.id or new_id, self.ttl_ns or DEFAULT_LOCK_TTL_NS, self.delay_ns or DEFAULT_LOCK_DELAY_NS)

    def check(self) -> None:
        """Nomad's VariableLock.Validate (on a canonical lock)."""
        if self.ttl_ns < 0 or self.delay_ns < 0:
            raise VariableRuleError("Lock delay and TTL must be positive")
        if not MIN_LOCK_TTL_NS <= self.ttl_ns <= MAX_LOCK_TTL_NS:
            raise VariableRuleError("TTL must be between 10 seconds and 24 hours")


def go_duration(nanos: int) -> str:
    """A duration as Go's time.Duration prints it ("15s", "1m0s", "1h0m0s", "1.5s", "500ms")."""
    if nanos < 0:
        return "-" + go_duration(-nanos)
    if nanos == 0:
        return "0s"
    if nanos < 1_000:
        return f"{nanos}ns"
    if nanos < 1_000_000:
        return _fraction(nanos, 1_000, 3) + "µs"
    if nanos < SECOND:
        return _fraction(nanos, 1_000_000, 6) + "ms"
    hours, rest = divmod(nanos, 3600 * SECOND)
    minutes, rest = divmod(rest, 60 * SECOND)
    seconds = _fraction(rest, SECOND, 9) + "s"
    if hours:
        return f"{hours}h{minutes}m{seconds}"
    return f"{minutes}m{seconds}" if minutes else seconds


def _fraction(nanos: int, unit: int, digits: int) -> str:
    whole, rest = divmod(nanos, unit)
    return f"{whole}.{str(rest).zfill(digits).rstrip('0')}" if rest else str(whole)
