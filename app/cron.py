"""When a periodic job launches: its cron specs read in its time zone (pure, no clock: callers
pass the times). Parsing is croniter's. A spec has 5 fields (minute first) or 6 (second first,
so "*/5 * * * * *" is every five seconds), or is a macro such as "@daily"."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from croniter import CroniterError, croniter


def specs_of(periodic: Mapping[str, Any]) -> list[str]:
    """The cron specs of a Nomad `Periodic` block: Spec, or else Specs."""
    spec = periodic.get("Spec") or ""
    return [spec] if spec else [s for s in periodic.get("Specs") or [] if s]


def cron_problem(spec: str) -> str | None:
    """Why croniter refuses the spec, or None if it parses."""
    try:
        croniter(spec, datetime(2000, 1, 1, tzinfo=UTC), second_at_beginning=True)
    except (CroniterError, ValueError, KeyError) as err:
        return str(err) or type(err).__name__
    return None


def _zone(periodic: Mapping[str, Any]) -> ZoneInfo:
    return ZoneInfo(periodic.get("TimeZone") or "UTC")


def next_launch(periodic: Mapping[str, Any], after: datetime) -> datetime | None:
    """The first launch strictly after `after` over all specs (UTC), or None without specs."""
    start = after.astimezone(_zone(periodic))
    found = [
        croniter(spec, start, second_at_beginning=True).get_next(datetime).astimezone(UTC)
        for spec in specs_of(periodic)
    ]
    return min(found, default=None)


def due_launch(periodic: Mapping[str, Any], last: datetime, now: datetime) -> datetime | None:
    """The launch to make now: the most recent scheduled time in (last, now], or None.

    Times missed while no leader ran (or while one was slow) are not launched one by one:
    only the most recent is, once, as Nomad's leader does after an election."""
    # croniter's get_prev is strictly before its start; start just after `now` (whole seconds:
    # cron has no finer resolution) so a launch at exactly `now` counts.
    start = (now.replace(microsecond=0) + timedelta(seconds=1)).astimezone(_zone(periodic))
    found = [
        croniter(spec, start, second_at_beginning=True).get_prev(datetime).astimezone(UTC)
        for spec in specs_of(periodic)
    ]
    latest = max(found, default=None)
    if latest is None or latest <= last or latest > now:
        return None
    return latest
