"""Nomad's reschedule delays: constant, exponential and fibonacci, the MaxDelay cap and its
reset; and the reconciler waiting for the chosen time before replacing a failed allocation."""

from __future__ import annotations

from typing import Any

import pytest

from app.scheduler.reschedule import failed_tracker, next_delay
from app.structs import ReschedulePolicy
from tests.support.scheduler_harness import HOUR, NOW, alloc, group, job, node, placed, run, snapshot

pytestmark = pytest.mark.unit
S = 1_000_000_000


def policy(function: str, delay: int = 5 * S, max_delay: int = 60 * S) -> ReschedulePolicy:
    return ReschedulePolicy(0, 0, delay, function, max_delay, unlimited=True)


def history(*delays: int, at: int = NOW) -> Any:  # a tracker with the keys the delay reads
    return {"Events": [{"RescheduleTime": at, "Delay": d} for d in delays]}


@pytest.mark.parametrize(
    ("function", "previous", "expected"),
    [
        ("constant", (), 5),
        ("constant", (5, 5), 5),
        ("exponential", (), 5),
        ("exponential", (5,), 10),
        ("exponential", (5, 10), 20),
        ("exponential", (40,), 60),  # capped
        ("fibonacci", (), 5),
        ("fibonacci", (5,), 5),
        ("fibonacci", (5, 5), 10),
        ("fibonacci", (5, 10), 15),
        ("fibonacci", (30, 40), 60),  # capped
        ("fibonacci", (60, 5), 5),  # a reset series starts over
    ],
)
def test_delay_functions(function: str, previous: tuple[int, ...], expected: int) -> None:
    assert next_delay(policy(function), history(*(d * S for d in previous)), NOW) == expected * S


def test_capped_delay_resets_once_it_has_passed_since_the_last_reschedule() -> None:
    tracker = history(60 * S, at=NOW - 2 * 60 * S)
    assert next_delay(policy("exponential"), tracker, NOW) == 5 * S


def test_failed_tracker_records_the_delay_and_the_due_time() -> None:
    tracker = failed_tracker(policy("exponential"), history(5 * S), NOW)
    assert tracker["NextDelay"] == 10 * S and tracker["NextRescheduleTime"] == NOW + 10 * S
    assert tracker["Events"] == history(5 * S)["Events"]


def test_failed_allocation_is_replaced_only_once_due_and_the_delay_is_recorded() -> None:
    nodes = [node(f"n{i}") for i in range(3)]
    j = job(groups=[group(count=1, reschedule=policy("constant", 30 * S, HOUR))])
    tracker = {"Events": [], "NextDelay": 30 * S, "NextRescheduleTime": NOW + 30 * S}
    failed = alloc(j, nodes[0], 0, client="failed", reschedule_tracker=tracker)
    early = run(snapshot(j, nodes, [failed]), now=NOW + 10 * S)
    assert early.plan.is_noop, "not before its delay: the delayed evaluation comes back for it"
    (new,) = placed(run(snapshot(j, nodes, [failed]), now=NOW + 30 * S))
    assert new.previous_allocation == failed.id and new.node_id != failed.node_id
    assert new.reschedule_tracker is not None
    (event,) = new.reschedule_tracker["Events"]
    assert event["Delay"] == 30 * S and "NextDelay" not in new.reschedule_tracker
