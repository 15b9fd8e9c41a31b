"""When periodic jobs launch (app.cron): next launches, time zones, several specs, seconds, and
the catch-up that launches only the most recent missed time, once."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.cron import cron_problem, due_launch, next_launch, specs_of
from app.structs import launches_children
from tests.unit.scheduler.harness import alloc, job, node, placed, run, snapshot, stopped

pytestmark = pytest.mark.unit


def at(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def test_next_launch_of_a_five_field_spec() -> None:
    assert next_launch({"Spec": "*/15 * * * *"}, at(2026, 3, 1, 10, 7, 3)) == at(2026, 3, 1, 10, 15)
    # Strictly after: a launch time is not its own next launch.
    assert next_launch({"Spec": "*/15 * * * *"}, at(2026, 3, 1, 10, 15)) == at(2026, 3, 1, 10, 30)


def test_six_fields_start_with_seconds() -> None:
    assert next_launch({"Spec": "*/5 * * * * *"}, at(2026, 3, 1, 10, 0, 1)) == at(2026, 3, 1, 10, 0, 5)
    assert next_launch({"Spec": "0 30 2 * * *"}, at(2026, 3, 1)) == at(2026, 3, 1, 2, 30)


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


def test_cron_problems_name_the_fault() -> None:
    assert cron_problem("*/15 * * * *") is None
    assert cron_problem("0 0 L * ?") is None
    assert "out of range" in str(cron_problem("61 * * * *"))


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
