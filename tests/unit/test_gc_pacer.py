"""GC pacing: a batch much slower per row than the recent ones of its kind earns a pause;
steady batches, sustained slowness and a disabled pacer never do. Durations are made up:
nothing here sleeps or measures time."""

from __future__ import annotations

import pytest

from app.gc.pacer import PACE_MIN_SAMPLES, PACE_WINDOW, SLOW_FACTOR, Pacer
from app.settings.config import Settings

pytestmark = pytest.mark.unit

EVALS = ("evaluations",)
ALLOCS = ("allocations",)


def warmed(ratio: float = 1.0, per_row: float = 0.001, kind: tuple[str, ...] = EVALS) -> Pacer:
    pacer = Pacer(ratio, sleep=lambda _s: None)
    for _ in range(PACE_MIN_SAMPLES):
        assert pacer.pause_after(kind, 1000, 1000 * per_row) == 0.0
    return pacer


def test_steady_batches_never_pause() -> None:
    pacer = warmed()
    for _ in range(100):
        assert pacer.pause_after(EVALS, 1000, 1.0) == 0.0


def test_a_spike_pauses_for_ratio_times_its_duration() -> None:
    pacer = warmed(ratio=0.5)
    slow = 1000 * 0.001 * SLOW_FACTOR * 1.5
    assert pacer.pause_after(EVALS, 1000, slow) == pytest.approx(0.5 * slow)
    # Just at the limit is not a spike.
    assert pacer.pause_after(EVALS, 1000, 1000 * 0.001 * SLOW_FACTOR) == 0.0


def test_time_per_row_not_per_batch_decides() -> None:
    pacer = warmed()
    assert pacer.pause_after(EVALS, 3000, 3.0) == 0.0  # three times the rows in three times the time


def test_no_pause_before_enough_batches_are_known() -> None:
    pacer = Pacer(1.0, sleep=lambda _s: None)
    for _ in range(PACE_MIN_SAMPLES - 1):
        pacer.pause_after(EVALS, 1000, 1.0)
    assert pacer.pause_after(EVALS, 1000, 100.0) == 0.0


def test_kinds_are_judged_apart() -> None:
    pacer = warmed(per_row=0.0001, kind=ALLOCS)
    for _ in range(PACE_MIN_SAMPLES):
        pacer.pause_after(EVALS, 1000, 1.0)
    # Ten times an allocation batch's time is an ordinary evaluation batch, and the reverse.
    assert pacer.pause_after(EVALS, 1000, 1.0) == 0.0
    assert pacer.pause_after(ALLOCS, 1000, 1.0) > 0


def test_sustained_slowness_becomes_the_norm() -> None:
    pacer = warmed()
    pauses = [pacer.pause_after(EVALS, 1000, 5.0) for _ in range(PACE_WINDOW)]
    assert pauses[0] > 0
    assert pauses[-1] == 0.0
    assert sum(1 for p in pauses if p) <= PACE_WINDOW // 2 + 1


def test_empty_batches_and_a_zero_ratio_never_pause() -> None:
    assert warmed().pause_after(EVALS, 0, 100.0) == 0.0
    assert warmed(ratio=0.0).pause_after(EVALS, 1000, 100.0) == 0.0


def test_off_unless_asked_for() -> None:
    assert Settings().gc_slow_batch_pause == 0
