"""Rules for periodic (cron-launched) jobs. Five fields start with the minute, six with the
second; croniter (app.cron) has the last word on each field."""

from __future__ import annotations

import re
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.cron import cron_problem
from app.jobspec.checks import Problems, one_of
from app.jobspec.errors import FieldError, quote
from app.jobspec.model import PeriodicConfig

SPEC_TYPES = ("cron",)
_CRON_MACROS = frozenset({"@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"})
# Digits, month and weekday names (JAN, MON), L/W/# modifiers, and the list, range,
# step and wildcard punctuation.
_CRON_FIELD = re.compile(r"[0-9A-Za-z*?/,#-]+")
_CRON_FIELD_COUNTS = (5, 6)


def check_periodic(periodic: PeriodicConfig, path: str) -> Problems:
    if periodic.spec and periodic.specs:
        yield FieldError(f"{path}.Specs", "cannot be combined with Spec")
    if periodic.enabled and not periodic.spec and not periodic.specs:
        yield FieldError(f"{path}.Spec", "is required when periodic is enabled (or set Specs)")
    if periodic.spec:
        yield from _check_cron(periodic.spec, f"{path}.Spec")
    for index, spec in enumerate(periodic.specs):
        yield from _check_cron(spec, f"{path}.Specs[{index}]")
    yield from one_of(periodic.spec_type, SPEC_TYPES, f"{path}.SpecType")
    if not _is_time_zone(periodic.time_zone):
        yield FieldError(
            f"{path}.TimeZone",
            f'must be an IANA time zone such as "UTC" or "Europe/Berlin", got {quote(periodic.time_zone)}',
        )


def _check_cron(spec: str, path: str) -> Problems:
    if spec.strip() in _CRON_MACROS:
        return
    fields = spec.split()
    if len(fields) not in _CRON_FIELD_COUNTS:
        yield FieldError(path, f"must be a cron expression with 5 or 6 fields, got {len(fields)} in {quote(spec)}")
        return
    bad = [field for field in fields if not _CRON_FIELD.fullmatch(field)]
    for field in bad:
        yield FieldError(path, f"has invalid characters in cron field {quote(field)}")
    if not bad and (problem := cron_problem(spec)) is not None:
        yield FieldError(path, f"is not a valid cron expression: {problem}")


def _is_time_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # ValueError covers malformed keys such as "" or "../x"; OSError covers keys that
        # name a directory of the zone database rather than a zone.
        return False
    return True
