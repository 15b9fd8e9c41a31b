"""Small reusable checks; each yields FieldErrors so callers can collect every problem."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from app.jobspec.durations import format_duration
from app.jobspec.errors import FieldError, quote

Problems = Iterator[FieldError]


def required(value: str, path: str) -> Problems:
    if not value:
        yield FieldError(path, "is required")


def at_least(value: int, minimum: int, path: str) -> Problems:
    if value < minimum:
        if minimum == 0:
            yield FieldError(path, f"must not be negative, got {value}")
        else:
            yield FieldError(path, f"must be at least {minimum}, got {value}")


def between(value: int, low: int, high: int, path: str) -> Problems:
    if not low <= value <= high:
        yield FieldError(path, f"must be between {low} and {high}, got {value}")


def one_of(value: str, allowed: Sequence[str], path: str) -> Problems:
    if value not in allowed:
        yield FieldError(path, f"must be one of {', '.join(allowed)}, got {quote(value)}")


def min_duration(value: int, minimum: int, path: str, reason: str = "") -> Problems:
    if value < minimum:
        suffix = f" {reason}" if reason else ""
        yield FieldError(
            path,
            f"must be at least {format_duration(minimum)}{suffix}, got {format_duration(value)}",
        )


def unique_names(names: Iterable[tuple[str, str]], scope: str) -> Problems:
    """Flag every repeat of a non-empty name; ``names`` pairs each name with its path."""
    seen: set[str] = set()
    for name, path in names:
        if name and name in seen:
            yield FieldError(path, f"duplicate name {quote(name)}; names must be unique {scope}")
        seen.add(name)


def not_inherited(
    own: Iterable[FieldError], own_path: str, inherited: Iterable[FieldError], inherited_path: str
) -> Problems:
    """Drop errors a merged block only repeats from the block it inherited from.

    A group copies the job's update block (a task its group's restart policy), so one bad
    value would otherwise be reported once for the source and again for every copy.
    """
    known = {(error.field.removeprefix(inherited_path), error.message) for error in inherited}
    for error in own:
        if (error.field.removeprefix(own_path), error.message) not in known:
            yield error
