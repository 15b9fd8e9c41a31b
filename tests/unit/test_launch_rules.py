"""Which periodic jobs launch on a tick (app/leader/launch_rules.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from app.leader.launch_rules import Due, Parent, due_launches
from app.wire.job import PeriodicConfigSpec

pytestmark = pytest.mark.unit
HOURLY: PeriodicConfigSpec = {"Spec": "0 * * * *"}
NOW = datetime(2030, 1, 1, 12, 30, tzinfo=UTC)


def test_only_the_most_recent_missed_time_is_due_once() -> None:
    parents = [
        Parent("default", "late", HOURLY, NOW - timedelta(hours=5)),
        Parent("default", "done", HOURLY, NOW.replace(minute=0)),
    ]
    assert due_launches(parents, NOW).due == (Due("default", "late", NOW.replace(minute=0)),)


def test_an_unusable_schedule_is_reported_and_does_not_stop_the_others() -> None:
    parents = [
        Parent(
            "default",
            "bad-zone",
            PeriodicConfigSpec(Spec=HOURLY["Spec"], TimeZone="Mars/Olympus"),
            NOW - timedelta(hours=1),
        ),
        Parent("default", "bad-spec", {"Spec": "61 * * * *"}, NOW - timedelta(hours=1)),
        Parent("default", "fine", HOURLY, NOW - timedelta(hours=1)),
    ]
    found = due_launches(parents, NOW)
    assert [d.job_id for d in found.due] == ["fine"]
    assert [u.job_id for u in found.unusable] == ["bad-zone", "bad-spec"]
    assert all(u.problem for u in found.unusable)
