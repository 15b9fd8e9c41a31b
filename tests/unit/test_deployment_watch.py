"""The deployment watcher's decision for one running deployment (app/leader/deployment_rules.py)."""

from __future__ import annotations

import uuid

import pytest

from app.leader.deployment_rules import FAILED_PROGRESS, FAILED_UNHEALTHY, GroupHealth, decide
from app.structs import DeploymentGroup

pytestmark = pytest.mark.unit

S = 1_000_000_000
NOW = 1_000_000 * S


def test_new_healthy_allocations_ask_for_an_evaluation_once() -> None:
    group = DeploymentGroup(desired_total=3, progress_deadline_ns=600 * S, require_progress_by_ns=NOW + S)
    seen = GroupHealth(healthy=1, latest_health_index=50, latest_healthy_ns=NOW - S)
    assert decide({"g": group}, {"g": seen}, 40, NOW).evaluate
    assert not decide({"g": group}, {"g": seen}, 60, NOW).evaluate  # an evaluation came after it


def test_progress_deadline_moves_with_health_and_fails_when_passed() -> None:
    group = DeploymentGroup(desired_total=2, progress_deadline_ns=10 * S, require_progress_by_ns=NOW - 5 * S)
    moved = decide({"g": group}, {"g": GroupHealth(healthy=1, latest_healthy_ns=NOW - 2 * S)}, 0, NOW)
    assert moved.fail is None and moved.groups["g"].require_progress_by_ns == NOW + 8 * S
    late = decide({"g": group}, {"g": GroupHealth(healthy=1, latest_healthy_ns=NOW - 20 * S)}, 0, NOW)
    assert late.fail == FAILED_PROGRESS and not late.evaluate
    done = decide({"g": group}, {"g": GroupHealth(healthy=2)}, 0, NOW)
    assert done.fail is None  # a group that is done has no deadline left to miss


def test_unhealthy_allocation_fails_without_deadline_or_is_replaced_with_one() -> None:
    bad = uuid.uuid4()
    seen = GroupHealth(unhealthy=(bad,), unhealthy_total=1)
    strict = DeploymentGroup(desired_total=2, progress_deadline_ns=0)
    assert decide({"g": strict}, {"g": seen}, 0, NOW).fail == FAILED_UNHEALTHY
    lenient = DeploymentGroup(desired_total=2, progress_deadline_ns=600 * S, require_progress_by_ns=NOW + S)
    decision = decide({"g": lenient}, {"g": seen}, 0, NOW)
    assert decision.fail is None and decision.reschedule == (bad,)


def test_auto_promote_only_when_every_canarying_group_allows_it_and_is_healthy() -> None:
    auto = DeploymentGroup(desired_total=2, desired_canaries=1, auto_promote=True)
    manual = DeploymentGroup(desired_total=2, desired_canaries=1, auto_promote=False)
    healthy = GroupHealth(healthy=1, healthy_canaries=1)
    assert decide({"a": auto}, {"a": healthy}, 0, NOW).promote
    assert not decide({"a": auto}, {"a": GroupHealth()}, 0, NOW).promote
    assert not decide({"a": auto, "b": manual}, {"a": healthy, "b": healthy}, 0, NOW).promote


def test_healthy_canaries_waiting_for_promotion_never_miss_the_deadline() -> None:
    group = DeploymentGroup(
        desired_total=3, desired_canaries=1, progress_deadline_ns=10 * S, require_progress_by_ns=NOW - S
    )
    waiting = decide({"g": group}, {"g": GroupHealth(healthy=1, healthy_canaries=1)}, 0, NOW)
    assert waiting.fail is None
    unhealthy_canary = decide({"g": group}, {"g": GroupHealth()}, 0, NOW)
    assert unhealthy_canary.fail == FAILED_PROGRESS
