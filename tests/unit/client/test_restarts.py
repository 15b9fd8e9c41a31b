"""The task restart policy: attempts per interval, delay, and the fail/delay modes."""

from __future__ import annotations

import pytest

from client.tasks.restarts import RestartPolicy, RestartTracker

pytestmark = pytest.mark.unit


def test_batch_success_completes_and_failures_restart_until_attempts_run_out() -> None:
    tracker = RestartTracker(RestartPolicy(attempts=2, interval_s=60, delay_s=3, mode="fail"), batch=True)
    assert tracker.after_exit(0.0, 0).action == "complete"
    assert [tracker.after_exit(t, 1).action for t in (1.0, 2.0, 3.0)] == ["restart", "restart", "fail"]


def test_service_exits_restart_even_when_successful_and_the_interval_resets_the_count() -> None:
    tracker = RestartTracker(RestartPolicy(attempts=1, interval_s=10, delay_s=2, mode="fail"), batch=False)
    first = tracker.after_exit(0.0, 0)
    assert (first.action, first.delay_s) == ("restart", 2)
    assert tracker.after_exit(5.0, 0).action == "fail"
    fresh = RestartTracker(RestartPolicy(attempts=1, interval_s=10, delay_s=2, mode="fail"), batch=False)
    assert [fresh.after_exit(t, 1).action for t in (0.0, 11.0, 22.0)] == ["restart"] * 3


def test_delay_mode_waits_out_the_interval_instead_of_failing() -> None:
    tracker = RestartTracker(RestartPolicy(attempts=1, interval_s=30, delay_s=2, mode="delay"), batch=True)
    tracker.after_exit(0.0, 1)
    decision = tracker.after_exit(4.0, 1)
    assert (decision.action, decision.delay_s) == ("restart", 26)


def test_policy_from_job_json_in_nanoseconds() -> None:
    spec = {"Attempts": 3, "Interval": 86_400_000_000_000, "Delay": 15_000_000_000, "Mode": "delay"}
    assert RestartPolicy.of(spec) == RestartPolicy(3, 86_400.0, 15.0, "delay")
