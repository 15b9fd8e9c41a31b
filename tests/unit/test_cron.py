"""When periodic jobs launch (app.values.cron): specs read as Nomad's cronexpr reads them (5 fields from
the minute, 6 with a year last, 7 with a second first, macros, L/W/#, names), next launches, time
zones and daylight saving, several specs, and the catch-up that launches only the most recent
missed time, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.structs import launches_children
from app.values.cron import CronError, cron_problem, due_launch, next_launch, parse, specs_of
from tests.support.scheduler_harness import alloc, job, node, placed, run, snapshot, stopped

pytestmark = pytest.mark.unit


def at(year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, micro: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, second, micro, tzinfo=UTC)


def test_next_launch_of_a_five_field_spec() -> None:
    assert next_launch({"Spec": "*/15 * * * *"}, at(2026, 3, 1, 10, 7, 3)) == at(2026, 3, 1, 10, 15)
    # Strictly after: a launch time is not its own next launch.
    assert next_launch({"Spec": "*/15 * * * *"}, at(2026, 3, 1, 10, 15)) == at(2026, 3, 1, 10, 30)


def upcoming(spec: str, after: datetime, count: int = 3, zone: str = "UTC") -> list[datetime | None]:
    found: list[datetime | None] = []
    periodic = {"Spec": spec, "TimeZone": zone}
    for _ in range(count):
        nxt = next_launch(periodic, after)
        found.append(nxt)
        if nxt is None:
            break
        after = nxt
    return found


def test_five_fields_start_with_the_minute_and_launch_on_the_whole_minute() -> None:
    assert upcoming("30 2 * * *", at(2026, 3, 1, 2, 30, 0, 1)) == [
        at(2026, 3, 2, 2, 30),
        at(2026, 3, 3, 2, 30),
        at(2026, 3, 4, 2, 30),
    ]
    assert upcoming("* * * * *", at(2026, 3, 1, 10, 0, 30)) == [
        at(2026, 3, 1, 10, 1),
        at(2026, 3, 1, 10, 2),
        at(2026, 3, 1, 10, 3),
    ]


def test_a_sixth_field_is_the_year_not_the_second() -> None:
    # "0 30 2 * * *" was once read as 02:30:00 daily; Nomad reads minute 0, hour 30: invalid.
    assert "hour" in str(cron_problem("0 30 2 * * *"))
    assert upcoming("30 2 * * * 2030", at(2026, 3, 1)) == [
        at(2030, 1, 1, 2, 30),
        at(2030, 1, 2, 2, 30),
        at(2030, 1, 3, 2, 30),
    ]
    assert upcoming("0 0 1 1 * 2027,2029", at(2026, 3, 1), 4) == [at(2027, 1, 1), at(2029, 1, 1), None]
    assert upcoming("*/5 * * * * *", at(2026, 3, 1, 10, 0, 1)) == [
        at(2026, 3, 1, 10, 5),
        at(2026, 3, 1, 10, 10),
        at(2026, 3, 1, 10, 15),
    ]


def test_a_year_that_is_over_never_launches_again() -> None:
    # cronexpr answers the zero time when nothing matches any more, and Nomad then launches nothing.
    assert cron_problem("0 3 * * * 2020") is None  # Nomad accepts it
    assert next_launch({"Spec": "0 3 * * * 2020"}, at(2026, 3, 1)) is None
    assert due_launch({"Spec": "0 3 * * * 2020"}, at(2026, 1, 1), at(2026, 3, 1)) is None
    # 2099 is the last year cronexpr knows.
    assert next_launch({"Spec": "@yearly"}, at(2099, 1, 1)) is None
    # Another spec still launches.
    assert next_launch({"Specs": ["0 3 * * * 2020", "@daily"]}, at(2026, 3, 1)) == at(2026, 3, 2)


def test_seven_fields_start_with_the_second_and_end_with_the_year() -> None:
    assert upcoming("*/5 * * * * * *", at(2026, 3, 1, 10, 0, 1)) == [
        at(2026, 3, 1, 10, 0, 5),
        at(2026, 3, 1, 10, 0, 10),
        at(2026, 3, 1, 10, 0, 15),
    ]
    assert upcoming("15 30 2 * * * 2030", at(2026, 3, 1)) == [
        at(2030, 1, 1, 2, 30, 15),
        at(2030, 1, 2, 2, 30, 15),
        at(2030, 1, 3, 2, 30, 15),
    ]
    # Strictly after, to the second, even from a fraction of a second.
    assert next_launch({"Spec": "* * * * * * *"}, at(2026, 3, 1, 10, 0, 0, 500_000)) == at(2026, 3, 1, 10, 0, 1)
    # Fields past the seventh are ignored, as cronexpr ignores them.
    assert next_launch({"Spec": "0 0 0 * * * 2030 junk"}, at(2026, 3, 1)) == at(2030, 1, 1)


@pytest.mark.parametrize(
    ("macro", "launches"),
    [
        ("@yearly", [at(2027, 1, 1), at(2028, 1, 1)]),
        ("@annually", [at(2027, 1, 1), at(2028, 1, 1)]),
        ("@monthly", [at(2026, 4, 1), at(2026, 5, 1)]),
        ("@weekly", [at(2026, 3, 8), at(2026, 3, 15)]),  # Sundays
        ("@daily", [at(2026, 3, 2), at(2026, 3, 3)]),
        ("@hourly", [at(2026, 3, 1, 11), at(2026, 3, 1, 12)]),
    ],
)
def test_macros(macro: str, launches: list[datetime]) -> None:
    assert upcoming(macro, at(2026, 3, 1, 10, 30), 2) == launches


def test_names_and_special_days() -> None:
    # March 2026 starts on a Sunday; the 15th is a Sunday, the 31st a Tuesday.
    start = at(2026, 3, 1)
    assert upcoming("0 9 * jan-mar mon-fri", start, 2) == [at(2026, 3, 2, 9), at(2026, 3, 3, 9)]
    assert upcoming("0 9 * JANUARY-MARCH Monday-Friday", start, 2) == [at(2026, 3, 2, 9), at(2026, 3, 3, 9)]
    assert upcoming("0 0 L * ?", start) == [at(2026, 3, 31), at(2026, 4, 30), at(2026, 5, 31)]
    assert upcoming("0 0 LW * *", start) == [at(2026, 3, 31), at(2026, 4, 30), at(2026, 5, 29)]  # May 31 is a Sunday
    assert upcoming("0 0 15W * *", start) == [at(2026, 3, 16), at(2026, 4, 15), at(2026, 5, 15)]
    assert upcoming("0 0 1W * *", at(2026, 7, 31)) == [at(2026, 8, 3), at(2026, 9, 1), at(2026, 10, 1)]  # Aug 1: Sat
    assert upcoming("0 0 * * 5L", start) == [at(2026, 3, 27), at(2026, 4, 24), at(2026, 5, 29)]
    assert upcoming("0 0 * * fri#3", start) == [at(2026, 3, 20), at(2026, 4, 17), at(2026, 5, 15)]
    assert upcoming("0 0 * * 7", start) == [at(2026, 3, 8), at(2026, 3, 15), at(2026, 3, 22)]  # 7 is Sunday
    assert upcoming("0 0 * * 5-7", start, 4) == [at(2026, 3, 6), at(2026, 3, 7), at(2026, 3, 8), at(2026, 3, 13)]
    assert upcoming("0 0 * * fri-sun", start, 3) == [at(2026, 3, 6), at(2026, 3, 7), at(2026, 3, 8)]
    assert upcoming("0 0 29 2 *", start, 2) == [at(2028, 2, 29), at(2032, 2, 29)]
    assert upcoming("*/20 5/20 * * *", start, 3) == [at(2026, 3, 1, 5), at(2026, 3, 1, 5, 20), at(2026, 3, 1, 5, 40)]


def test_both_day_fields_restricted_means_either_matches() -> None:
    # The 1st of the month or any Monday (March 2 and 9 2026 are Mondays).
    assert upcoming("0 0 1 * mon", at(2026, 2, 28), 3) == [at(2026, 3, 1), at(2026, 3, 2), at(2026, 3, 9)]
    # A restricted day-of-week that covers the whole week makes every day match.
    assert upcoming("0 0 1 * 0-6", at(2026, 3, 1), 2) == [at(2026, 3, 2), at(2026, 3, 3)]
    # `?` is `*`: only the other field restricts.
    assert upcoming("0 0 ? * mon", at(2026, 3, 1), 2) == [at(2026, 3, 2), at(2026, 3, 9)]


def test_a_spring_forward_skips_the_missing_wall_times() -> None:
    # New York: 2026-03-08 02:00 EST jumps to 03:00 EDT; 02:30 does not exist that day.
    zone = "America/New_York"
    assert upcoming("30 2 * * *", at(2026, 3, 7, 12), 2, zone) == [at(2026, 3, 9, 6, 30), at(2026, 3, 10, 6, 30)]
    assert upcoming("*/30 * * * *", at(2026, 3, 8, 6, 20), 3, zone) == [
        at(2026, 3, 8, 6, 30),  # 01:30 EST
        at(2026, 3, 8, 7),  # 03:00 EDT
        at(2026, 3, 8, 7, 30),
    ]


def test_a_fall_back_launches_a_repeated_wall_time_at_both_instants() -> None:
    # New York: 2026-11-01 02:00 EDT falls back to 01:00 EST; 01:30 happens twice.
    zone = "America/New_York"
    assert upcoming("30 1 * * *", at(2026, 10, 31, 12), 3, zone) == [
        at(2026, 11, 1, 5, 30),  # 01:30 EDT
        at(2026, 11, 1, 6, 30),  # 01:30 EST
        at(2026, 11, 2, 6, 30),
    ]
    periodic = {"Spec": "30 1 * * *", "TimeZone": zone}
    # The catch-up finds the latest of the two, and the first before the clock went back.
    assert due_launch(periodic, at(2026, 10, 31), at(2026, 11, 1, 7)) == at(2026, 11, 1, 6, 30)
    assert due_launch(periodic, at(2026, 10, 31), at(2026, 11, 1, 6)) == at(2026, 11, 1, 5, 30)
    assert due_launch(periodic, at(2026, 11, 1, 5, 30), at(2026, 11, 1, 6, 29, 59)) is None


def test_an_unusable_spec_raises_for_the_leader_to_log() -> None:
    with pytest.raises(CronError, match="minute field"):
        next_launch({"Spec": "61 * * * *"}, at(2026, 3, 1))
    with pytest.raises(CronError, match="second field"):
        due_launch({"Spec": "61 * * * * * *"}, at(2026, 3, 1), at(2026, 3, 2))


def test_time_zone_is_honoured_across_daylight_saving() -> None:
    periodic = {"Spec": "0 3 * * *", "TimeZone": "America/New_York"}
    assert next_launch(periodic, at(2026, 1, 2)) == at(2026, 1, 2, 8)  # EST: UTC-5
    assert next_launch(periodic, at(2026, 7, 2)) == at(2026, 7, 2, 7)  # EDT: UTC-4


def test_several_specs_take_the_earliest() -> None:
    periodic = {"Specs": ["0 * * * *", "30 * * * *"]}
    assert specs_of(periodic) == ["0 * * * *", "30 * * * *"]
    assert next_launch(periodic, at(2026, 3, 1, 10, 5)) == at(2026, 3, 1, 10, 30)
    assert next_launch(periodic, at(2026, 3, 1, 10, 35)) == at(2026, 3, 1, 11)
    assert next_launch({"Specs": []}, at(2026, 3, 1)) is None


def test_nothing_is_due_before_the_next_scheduled_time() -> None:
    periodic = {"Spec": "0 * * * *"}
    assert due_launch(periodic, at(2026, 3, 1, 10), at(2026, 3, 1, 10, 59, 59)) is None


def test_a_launch_exactly_now_is_due() -> None:
    periodic = {"Spec": "0 * * * *"}
    assert due_launch(periodic, at(2026, 3, 1, 10), at(2026, 3, 1, 11)) == at(2026, 3, 1, 11)
    late = at(2026, 3, 1, 11) + timedelta(milliseconds=700)
    assert due_launch(periodic, at(2026, 3, 1, 10), late) == at(2026, 3, 1, 11)


def test_catch_up_launches_only_the_most_recent_missed_time_once() -> None:
    periodic = {"Spec": "*/10 * * * *"}
    last, now = at(2026, 3, 1, 10), at(2026, 3, 1, 13, 42)  # 21 launches missed
    due = due_launch(periodic, last, now)
    assert due == at(2026, 3, 1, 13, 40)
    # Once recorded, nothing more is due until the next scheduled time.
    assert due is not None and due_launch(periodic, due, now) is None
    assert due_launch(periodic, due, at(2026, 3, 1, 13, 50)) == at(2026, 3, 1, 13, 50)


def test_catch_up_over_several_specs_takes_the_latest() -> None:
    periodic = {"Specs": ["0 * * * *", "45 * * * *"], "TimeZone": "Europe/Berlin"}
    assert due_launch(periodic, at(2026, 3, 1), at(2026, 3, 1, 10, 50)) == at(2026, 3, 1, 10, 45)


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("", "needs 5 to 7 fields, got 0"),
        ("* * * *", "needs 5 to 7 fields, got 4"),
        ("@midnight", "unknown macro '@midnight'"),
        ("@DAILY", "unknown macro '@DAILY'"),
        ("61 * * * *", "syntax error in minute field: '61'"),
        ("* 24 * * *", "syntax error in hour field: '24'"),
        ("0 0 0 * *", "syntax error in day-of-month field: '0'"),
        ("0 0 32 * *", "syntax error in day-of-month field: '32'"),
        ("0 0 * 13 *", "syntax error in month field: '13'"),
        ("0 0 * * 8", "syntax error in day-of-week field: '8'"),
        ("* * * * $", "syntax error in day-of-week field: '$'"),
        ("0 0 * * 1#6", "syntax error in day-of-week field: '1#6'"),
        ("0 0 L5 * *", "syntax error in day-of-month field: 'l5'"),
        ("0 0 * * * 1969", "syntax error in year field: '1969'"),
        ("0 0 * * * 2100", "syntax error in year field: '2100'"),
        ("60 * * * * * *", "syntax error in second field: '60'"),
        ("*/60 * * * *", "minute field: invalid interval '*/60'"),
        ("5/0 * * * *", "minute field: invalid interval '5/0'"),
        ("0 0 * * */7", "day-of-week field: invalid interval '*/7'"),
        ("?/5 * * * *", "syntax error in minute field: '?/5'"),
        (", * * * *", "minute field: missing directive"),
        ("30-10 * * * *", "minute field: range '30-10' runs backwards"),
    ],
)
def test_specs_nomad_refuses_are_refused_naming_the_field(spec: str, problem: str) -> None:
    assert str(cron_problem(spec)).startswith(problem)
    with pytest.raises(CronError):
        parse(spec)


@pytest.mark.parametrize(
    "spec",
    [
        "*/15 * * * *",
        "0 0 L * ?",
        "0 0 LW * *",
        "0 9 1,15 * 1-5",
        "0 0 * * * ?",
        "00 07 * * *",
        "* * * * * * *",
        "@weekly",
    ],
)
def test_specs_nomad_accepts_are_accepted(spec: str) -> None:
    assert cron_problem(spec) is None
    assert parse(spec).seconds


def test_periodic_and_parameterized_parents_launch_children() -> None:
    assert launches_children({"Periodic": {"Spec": "@daily", "Enabled": False}})
    assert launches_children({"ParameterizedJob": {}})
    assert not launches_children({"ParameterizedJob": {}, "Dispatched": True})
    assert not launches_children({"Periodic": None})


def test_a_periodic_parent_is_never_placed_and_stops_what_it_ran() -> None:
    n = node()
    plain = job("nightly", type="batch")
    parent = job("nightly", type="batch", launches_children=True)
    assert len(placed(run(snapshot(plain, [n])))) == 1  # the same job without the block would place
    assert placed(run(snapshot(parent, [n]))) == []
    old = alloc(plain, n)
    result = run(snapshot(parent, [n], [old]))
    assert placed(result) == [] and set(stopped(result)) == {old.id}
