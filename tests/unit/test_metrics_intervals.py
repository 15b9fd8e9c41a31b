"""go-metrics' interval arithmetic: the roles keep their figures per 10 s wall-clock interval and
/v1/metrics's JSON reports the last completed one (Timestamp its start, Rate = Sum / 10, a key
without observations in it absent)."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest

from app.metrics.aggregates import Aggregate, Aggregates
from app.metrics.intervals import interval_start, rate, reported_start
from app.metrics.nomad_json import IntervalView, to_nomad_json
from workers.metrics_http import own_interval
from workers.timings_publisher import until_next_publish

pytestmark = pytest.mark.unit
T0 = datetime(2026, 11, 29, 20, 0, 0, tzinfo=UTC).timestamp()


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_intervals_are_aligned_to_the_wall_clock() -> None:
    assert interval_start(T0 + 9.99) == T0 and interval_start(T0 + 10) == T0 + 10
    assert reported_start(T0 + 15, settle_s=0) == T0  # the last completed interval
    assert reported_start(T0 + 11, settle_s=2) == T0 - 10  # T0's may not be published yet
    assert reported_start(T0 + 12, settle_s=2) == T0
    assert rate(50.0) == 5.0


def test_each_interval_keeps_only_its_own_observations() -> None:
    clock = Clock(T0 + 1)
    aggregates = Aggregates(clock)
    aggregates.observe("t", {}, 10.0)
    aggregates.observe("t", {}, 30.0)
    clock.now = T0 + 12
    aggregates.observe("t", {}, 5.0)
    aggregates.observe("c", {}, 1.0, 3)
    assert [i.start for i in aggregates.completed()] == [T0]
    clock.now = T0 + 25  # an interval without observations leaves nothing behind
    [first, second] = aggregates.completed()
    assert first.figures == {("t", ()): Aggregate(2, 40.0, 1000.0, 10.0, 30.0)}
    assert second.start == T0 + 10
    assert second.figures == {("t", ()): Aggregate.of(5.0), ("c", ()): Aggregate(3, 3.0, 3.0, 1.0, 1.0)}
    assert aggregates.snapshot()[("t", ())].count == 3  # the cumulative figures go on


def test_a_minute_of_intervals_is_retained() -> None:
    clock = Clock(T0)
    aggregates = Aggregates(clock)
    for step in range(10):
        clock.now = T0 + 10 * step
        aggregates.observe("t", {}, float(step))
    clock.now = T0 + 100
    assert [i.start for i in aggregates.completed()] == [T0 + 10 * s for s in range(4, 10)]


def test_a_clock_stepping_back_does_not_reopen_an_interval() -> None:
    clock = Clock(T0 + 15)
    aggregates = Aggregates(clock)
    aggregates.observe("t", {}, 1.0)
    clock.now = T0 + 5
    aggregates.observe("t", {}, 2.0)
    clock.now = T0 + 21
    [only] = aggregates.completed()
    assert only.start == T0 + 10 and only.figures[("t", ())].count == 2


def test_the_summary_reports_one_interval_as_go_metrics_does() -> None:
    view = IntervalView(
        T0,
        {
            ("nomad_test_apply", ("type=service",)): Aggregate(2, 40.0, 1000.0, 10.0, 30.0),
            ("nomad_test_rejected", ()): Aggregate(3, 3.0, 3.0, 1.0, 1.0),
        },
        frozenset({"nomad_test_rejected"}),
    )
    names = {"nomad_test_apply": "nomad.test.apply", "nomad_test_rejected": "nomad.test.rejected"}
    body = to_nomad_json([], names, datetime.fromtimestamp(T0 + 13, UTC), interval=view)
    assert body["Timestamp"] == "2026-11-29 20:00:00 +0000 UTC"
    [sample] = body["Samples"]
    assert sample == {
        "Name": "nomad.test.apply",
        "Count": 2,
        "Rate": 4.0,
        "Sum": 40.0,
        "Min": 10.0,
        "Max": 30.0,
        "Mean": 20.0,
        "Stddev": pytest.approx(math.sqrt(200)),
        "Labels": {"type": "service"},
    }
    [counter] = body["Counters"]
    assert (counter["Count"], counter["Sum"], counter["Rate"], counter["Stddev"]) == (3, 3.0, 0.3, 0.0)


def test_a_role_reports_its_last_completed_interval() -> None:
    clock = Clock(T0 + 3)
    aggregates = Aggregates(clock)
    aggregates.observe("t", {}, 4.0)
    clock.now = T0 + 14
    aggregates.observe("t", {}, 8.0)  # in the current interval: not reported yet
    view = own_interval(T0 + 14, aggregates)
    assert view.start == T0 and view.figures == {("t", ()): Aggregate.of(4.0)}
    clock.now = T0 + 31  # T0+20's interval saw nothing: nothing to report
    assert own_interval(T0 + 31, aggregates).figures == {}


def test_roles_publish_just_after_each_boundary() -> None:
    assert until_next_publish(T0) == pytest.approx(0.5)
    assert until_next_publish(T0 + 0.5) == pytest.approx(10.0)
    assert until_next_publish(T0 + 7) == pytest.approx(3.5)
