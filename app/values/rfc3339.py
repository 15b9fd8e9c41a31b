"""Go's time.Time as Nomad's JSON carries it: RFC 3339 in UTC with up to nanoseconds, and the
zero time ``0001-01-01T00:00:00Z`` standing for "not set". Stored drain strategies and served
objects use this form; the drainer reads it back as Unix nanoseconds."""

from __future__ import annotations

from datetime import UTC, datetime

NANOS = 1_000_000_000
ZERO_TIME = "0001-01-01T00:00:00Z"  # how Go encodes time.Time{}


def rfc3339(unix_ns: int) -> str:
    """Unix nanoseconds as Go's time.Time JSON (RFC 3339 with nanoseconds, trailing zeros
    dropped), in UTC; 0 is Go's zero time."""
    if unix_ns <= 0:
        return ZERO_TIME
    seconds, fraction = divmod(unix_ns, NANOS)
    text = datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    if fraction:
        text += "." + f"{fraction:09d}".rstrip("0")
    return text + "Z"


def of_datetime(moment: datetime | None) -> str:
    """A datetime (None: not set) as Go's time.Time JSON."""
    if moment is None:
        return ZERO_TIME
    return rfc3339(int(moment.timestamp()) * NANOS + moment.microsecond * 1000)


def unix_ns(text: object) -> int:
    """Unix nanoseconds of an RFC 3339 time; 0 for the zero time, none, or anything else."""
    if not isinstance(text, str) or not text or text == ZERO_TIME:
        return 0
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp()) * NANOS + moment.microsecond * 1000
