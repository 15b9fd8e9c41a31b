"""Rules for periodic (cron-launched) jobs, as Nomad's: Spec or Specs (not both), SpecType "cron",
an IANA TimeZone, and every spec readable by app.values.cron (Nomad's cronexpr grammar: 5 fields from the
minute, 6 with a year last, 7 with a second first, or a macro)."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from app.jobspec.errors import FieldError, quote
from app.jobspec.model import PeriodicConfig
from app.jobspec.rules.checks import Problems, one_of
from app.values.cron import cron_problem

SPEC_TYPES = ("cron",)


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
    if (problem := cron_problem(spec)) is not None:
        yield FieldError(path, f"is not a valid cron expression: {problem} in {quote(spec)}")


def _is_time_zone(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # ValueError covers malformed keys such as "" or "../x"; OSError covers keys that
        # name a directory of the zone database rather than a zone.
        return False
    return True
