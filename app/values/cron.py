"""When a periodic job launches: its cron specs read exactly as Nomad reads them (hashicorp/cronexpr),
in the job's time zone. Pure, no clock: callers pass the times.

A spec is one of:

- 5 fields: minute hour day-of-month month day-of-week (second 0, any year);
- 6 fields: minute hour day-of-month month day-of-week year (second 0): "0 3 * * * 2030";
- 7 fields: second minute hour day-of-month month day-of-week year: "*/5 * * * * * *" is every
  five seconds (a sixth field is a YEAR, never a second);
- a macro, replaced wherever it appears: @yearly and @annually (0 0 0 1 1 * *), @monthly
  (0 0 0 1 * * *), @weekly (0 0 0 * * 0 *), @daily (0 0 0 * * * *), @hourly (0 0 * * * * *).
  There is no @midnight and no @reboot. Fewer than 5 fields is refused; fields past the 7th are
  ignored, as cronexpr ignores them.

Each field is a comma list of `*` or `?` (any), `v`, `a-b`, `*/n`, `v/n` (v to the field's end) and
`a-b/n`, case-insensitive. Ranges: second and minute 0-59, hour 0-23, day-of-month 1-31, month 1-12
or jan..dec / january..december, day-of-week 0-7 (0 and 7 are Sunday) or sun..sat /
sunday..saturday, year 1970-2099; a step lies in 1..the field's maximum (so at most 6 for
day-of-week). Day-of-month also takes `L` (last day), `LW` (last weekday) and `15W` (the weekday
nearest the 15th, within the month); day-of-week takes `5L` (last Friday) and `5#3` (third Friday).
When both day fields are restricted (not `*` or `?`) a day matching either one matches.

Where Nomad's parser would accept a field that can never match (a backwards range such as
`30-10`), corral refuses it instead: cronexpr yields an empty set there and never launches.

A launch happens at every instant whose wall-clock reading in the time zone matches: wall times
that a spring-forward skips never launch, wall times that a fall-back repeats launch at both
instants. After the last matching time (a year list that is over, or 2099) there is no next
launch, as cronexpr's zero time means for Nomad.

The grammar and the search are corral's own rather than croniter's: croniter reads six fields as
second-first, has no `LW`, `5L` or full names, and wraps backwards ranges around."""

from __future__ import annotations

import calendar
import re
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from typing import Any
from zoneinfo import ZoneInfo

FIRST_YEAR, LAST_YEAR = 1970, 2099
_MACROS = {
    "@yearly": "0 0 0 1 1 * *",
    "@annually": "0 0 0 1 1 * *",
    "@monthly": "0 0 0 1 * * *",
    "@weekly": "0 0 0 * * 0 *",
    "@daily": "0 0 0 * * * *",
    "@hourly": "0 0 * * * * *",
}
_MACRO = re.compile("|".join(re.escape(name) for name in _MACROS))
# Go's \S: anything but ASCII space, tab, newline, form feed and carriage return.
_FIELD = re.compile(r"[^ \t\n\f\r]+")
# English names whatever the locale; months from 1, days of the week from Sunday (0).
_MONTH_NAMES = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_DAY_NAMES = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
# How far (at most) a time zone's UTC offset moves at one transition; folds are never longer.
_SHIFT = timedelta(hours=3)


class CronError(ValueError):
    """A spec Nomad's cron parser refuses (or one that could never match)."""


@dataclass(frozen=True)
class _Field:
    name: str
    low: int
    high: int
    names: Mapping[str, int]

    def value(self, token: str) -> int | None:
        """The value a token names, or None: decimal with at most one leading zero, or a name."""
        if token in self.names:
            return self.names[token]
        if re.fullmatch(r"0?[0-9]|[1-9][0-9]{1,3}", token) is None:
            return None
        number = int(token)
        top = 7 if self.name == "day-of-week" else self.high
        return number if self.low <= number <= top else None


_SECOND = _Field("second", 0, 59, {})
_MINUTE = _Field("minute", 0, 59, {})
_HOUR = _Field("hour", 0, 23, {})
_DOM = _Field("day-of-month", 1, 31, {})
_MONTH = _Field("month", 1, 12, {n[:k]: i for i, n in enumerate(_MONTH_NAMES, 1) for k in (3, len(n))})
_DOW = _Field("day-of-week", 0, 6, {n[:k]: i for i, n in enumerate(_DAY_NAMES) for k in (3, len(n))})
_YEAR = _Field("year", FIRST_YEAR, LAST_YEAR, {})


@dataclass(frozen=True)
class Cron:
    """One parsed spec: the values each field allows, and the day rules."""

    seconds: tuple[int, ...]
    minutes: tuple[int, ...]
    hours: tuple[int, ...]
    months: tuple[int, ...]
    years: tuple[int, ...]
    days_of_month: frozenset[int]
    weekdays_near: frozenset[int]  # `15W`
    last_day: bool  # `L`
    last_weekday: bool  # `LW`
    dom_restricted: bool
    days_of_week: frozenset[int]  # 0 is Sunday
    last_of_month: frozenset[int]  # `5L`
    nth_of_month: frozenset[tuple[int, int]]  # `5#3` is (5, 3)
    dow_restricted: bool


def parse(spec: str) -> Cron:
    """Read a spec as cronexpr does; CronError names the field at fault."""
    fields = _FIELD.findall(_MACRO.sub(lambda m: _MACROS[m.group(0)], spec))
    if len(fields) < 5:
        if len(fields) == 1 and fields[0].startswith("@"):
            raise CronError(f"unknown macro {fields[0]!r} (known: {', '.join(_MACROS)})")
        raise CronError(f"needs 5 to 7 fields, got {len(fields)}")
    fields = fields[:7]
    seconds = _values(fields.pop(0), _SECOND) if len(fields) == 7 else (0,)
    minute, hour, dom, month, dow = fields[:5]
    dom_rule = _dom(dom)
    dow_rule = _dow(dow)
    return Cron(
        seconds=seconds,
        minutes=_values(minute, _MINUTE),
        hours=_values(hour, _HOUR),
        months=_values(month, _MONTH),
        years=_values(fields[5], _YEAR) if len(fields) == 6 else tuple(range(FIRST_YEAR, LAST_YEAR + 1)),
        days_of_month=dom_rule[0],
        weekdays_near=dom_rule[1],
        last_day=dom_rule[2],
        last_weekday=dom_rule[3],
        dom_restricted=dom_rule[4],
        days_of_week=dow_rule[0],
        last_of_month=dow_rule[1],
        nth_of_month=dow_rule[2],
        dow_restricted=dow_rule[3],
    )


def _entries(text: str, field: _Field) -> list[str]:
    entries = [entry.lower() for entry in text.split(",") if entry]
    if not entries:
        raise CronError(f"{field.name} field: missing directive")
    return entries


def _span(entry: str, field: _Field) -> list[int] | None:
    """The values of a plain entry (`*`, `?`, `v`, `a-b`, each but `?` with an optional `/n`), or
    None when the entry is not of that shape (an L, W or # form, or a typo)."""
    if entry in ("*", "?"):
        return list(range(field.low, field.high + 1))
    body, slash, step_text = entry.partition("/")
    step = 1
    if slash:
        if re.fullmatch(r"[0-9]+", step_text) is None:
            return None
        step = _step(step_text)
        if not 1 <= step <= field.high:
            raise CronError(f"{field.name} field: invalid interval {entry!r} (the step must be 1 to {field.high})")
    weekday = field is _DOW
    if body == "*" and slash:
        first, last = field.low, field.high
    else:
        first_text, dash, last_text = body.partition("-")
        start = field.value(first_text)
        end = field.value(last_text) if dash else None
        if start is None or (dash and end is None):
            return None
        if end is not None:
            first, last = start, end
            if weekday and last_text in ("sun", "sunday") and first > 0:
                last = 7  # fri-sun runs through Sunday, as 5-7 does
        else:
            first = start % 7 if weekday else start  # a lone 7 is Sunday
            last = field.high if slash else first
    if first > last:
        raise CronError(f"{field.name} field: range {entry!r} runs backwards and would never match")
    return [value % 7 if weekday else value for value in range(first, last + 1, step)]


def _step(text: str) -> int:
    # cronexpr reads a step through its number table: 0-59 (one leading zero allowed) or a year.
    if re.fullmatch(r"0?[0-9]|[1-5][0-9]", text) or (
        re.fullmatch(r"[0-9]{4}", text) and FIRST_YEAR <= int(text) <= LAST_YEAR
    ):
        return int(text)
    return 0


def _values(text: str, field: _Field) -> tuple[int, ...]:
    values: set[int] = set()
    for entry in _entries(text, field):
        found = _span(entry, field)
        if found is None:
            raise CronError(f"syntax error in {field.name} field: {entry!r}")
        values.update(found)
    return tuple(sorted(values))


def _dom(text: str) -> tuple[frozenset[int], frozenset[int], bool, bool, bool]:
    days: set[int] = set()
    near: set[int] = set()
    last = last_weekday = False
    restricted = True
    for entry in _entries(text, _DOM):
        if entry in ("*", "?"):
            restricted = False
        if (found := _span(entry, _DOM)) is not None:
            days.update(found)
        elif entry == "l":
            last = True
        elif entry == "lw":
            last_weekday = True
        elif entry.endswith("w") and (day := _DOM.value(entry[:-1])) is not None:
            near.add(day)
        else:
            raise CronError(f"syntax error in day-of-month field: {entry!r}")
    return frozenset(days), frozenset(near), last, last_weekday, restricted


def _dow(text: str) -> tuple[frozenset[int], frozenset[int], frozenset[tuple[int, int]], bool]:
    days: set[int] = set()
    last: set[int] = set()
    nth: set[tuple[int, int]] = set()
    restricted = True
    for entry in _entries(text, _DOW):
        if entry in ("*", "?"):
            restricted = False
        if (found := _span(entry, _DOW)) is not None:
            days.update(found)
        elif entry.endswith("l") and (day := _DOW.value(entry[:-1])) is not None:
            last.add(day % 7)
        elif (match := re.fullmatch(r"(.+)#([1-5])", entry)) and (day := _DOW.value(match[1])) is not None:
            nth.add((day % 7, int(match[2])))
        else:
            raise CronError(f"syntax error in day-of-week field: {entry!r}")
    return frozenset(days), frozenset(last), frozenset(nth), restricted


@lru_cache(maxsize=4096)
def _days(cron: Cron, year: int, month: int) -> tuple[int, ...]:
    length = calendar.monthrange(year, month)[1]
    if not cron.dom_restricted and not cron.dow_restricted:
        return tuple(range(1, length + 1))
    found: set[int] = set()
    if cron.dom_restricted:
        found.update(day for day in cron.days_of_month if day <= length)
        if cron.last_day:
            found.add(length)
        if cron.last_weekday:
            found.add(_weekday_near(year, month, length))
        found.update(_weekday_near(year, month, day) for day in cron.weekdays_near if day <= length)
    if cron.dow_restricted:
        for day in range(1, length + 1):
            weekday = (date(year, month, day).weekday() + 1) % 7  # 0 is Sunday
            week = (day - 1) // 7 + 1
            if (
                weekday in cron.days_of_week
                or (weekday, week) in cron.nth_of_month
                or (weekday in cron.last_of_month and day + 7 > length)
            ):
                found.add(day)
    return tuple(sorted(found))


def _weekday_near(year: int, month: int, day: int) -> int:
    """The Monday-to-Friday day nearest `day` without leaving the month."""
    length = calendar.monthrange(year, month)[1]
    weekday = date(year, month, day).weekday()  # 5 Saturday, 6 Sunday
    if weekday == 5:
        return day - 1 if day > 1 else day + 2
    if weekday == 6:
        return day + 1 if day < length else day - 2
    return day


def _walls(cron: Cron, start: datetime, *, forward: bool) -> Iterator[datetime]:
    """Matching wall-clock times (naive), from `start` (inclusive) onwards, or backwards."""

    def pick(values: Sequence[int], bound: int, bounded: bool) -> Sequence[int]:
        if not bounded:
            return values if forward else values[::-1]
        if forward:
            return values[bisect_left(values, bound) :]
        return values[: bisect_left(values, bound + 1)][::-1]

    years = pick(cron.years, start.year, True)
    for year in years:
        at_year = year == start.year
        for month in pick(cron.months, start.month, at_year):
            at_month = at_year and month == start.month
            for day in pick(_days(cron, year, month), start.day, at_month):
                at_day = at_month and day == start.day
                for hour in pick(cron.hours, start.hour, at_day):
                    at_hour = at_day and hour == start.hour
                    for minute in pick(cron.minutes, start.minute, at_hour):
                        at_minute = at_hour and minute == start.minute
                        for second in pick(cron.seconds, start.second, at_minute):
                            yield datetime(year, month, day, hour, minute, second)  # noqa: DTZ001 (wall time)


def _instants(wall: datetime, zone: ZoneInfo) -> list[datetime]:
    """The UTC instants at which the zone's clock reads `wall`: none in a gap, two in a fold."""
    found = []
    for fold in (0, 1):
        instant = wall.replace(tzinfo=zone, fold=fold).astimezone(UTC)
        if instant.astimezone(zone).replace(tzinfo=None) == wall and instant not in found:
            found.append(instant)
    return found


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    return instant.astimezone(zone).replace(tzinfo=None, microsecond=0)


def _offset(instant: datetime, zone: ZoneInfo) -> timedelta:
    return instant.astimezone(zone).utcoffset() or timedelta(0)


def next_time(cron: Cron, after: datetime, zone: ZoneInfo) -> datetime | None:
    """The first matching instant strictly after `after` (UTC), or None if there is none."""
    # Wall time only runs backwards at a fall-back, by less than _SHIFT: start early enough to see
    # the repeated times, and stop once no later wall time can be an earlier instant.
    start = min(_wall(after, zone), _wall(after + _SHIFT, zone) - _SHIFT)
    best: datetime | None = None
    stop: datetime | None = None
    for wall in _walls(cron, start, forward=True):
        if stop is not None and wall > stop:
            break
        for instant in _instants(wall, zone):
            if instant > after and (best is None or instant < best):
                best = instant
                drop = _offset(best - _SHIFT, zone) - _offset(best, zone)
                stop = wall + max(drop, timedelta(0))
    return best


def last_time(cron: Cron, until: datetime, zone: ZoneInfo) -> datetime | None:
    """The latest matching instant at or before `until` (UTC), or None if there is none."""
    start = max(_wall(until, zone), _wall(until - _SHIFT, zone) + _SHIFT)
    best: datetime | None = None
    stop: datetime | None = None
    for wall in _walls(cron, start, forward=False):
        if stop is not None and wall < stop:
            break
        for instant in _instants(wall, zone):
            if instant <= until and (best is None or instant > best):
                best = instant
                drop = _offset(best, zone) - _offset(best + _SHIFT, zone)
                stop = wall - max(drop, timedelta(0))
    return best


def specs_of(periodic: Mapping[str, Any]) -> list[str]:
    """The cron specs of a Nomad `Periodic` block: Spec, or else Specs."""
    spec = periodic.get("Spec") or ""
    return [spec] if spec else [s for s in periodic.get("Specs") or [] if s]


def cron_problem(spec: str) -> str | None:
    """Why the spec is refused, naming the cron field at fault, or None if Nomad would read it."""
    try:
        parse(spec)
    except CronError as err:
        return str(err)
    return None


def _zone(periodic: Mapping[str, Any]) -> ZoneInfo:
    return ZoneInfo(periodic.get("TimeZone") or "UTC")


def next_launch(periodic: Mapping[str, Any], after: datetime) -> datetime | None:
    """The first launch strictly after `after` over all specs (UTC), or None when there is none
    (no specs, or every spec's years are over). Raises CronError for a spec Nomad refuses."""
    zone = _zone(periodic)
    found = [t for spec in specs_of(periodic) if (t := next_time(parse(spec), after, zone)) is not None]
    return min(found, default=None)


def due_launch(periodic: Mapping[str, Any], last: datetime, now: datetime) -> datetime | None:
    """The launch to make now: the most recent scheduled time in (last, now], or None.

    Times missed while no leader ran (or while one was slow) are not launched one by one:
    only the most recent is, once, as Nomad's leader does after an election."""
    zone = _zone(periodic)
    found = [t for spec in specs_of(periodic) if (t := last_time(parse(spec), now, zone)) is not None]
    latest = max(found, default=None)
    if latest is None or latest <= last:
        return None
    return latest
