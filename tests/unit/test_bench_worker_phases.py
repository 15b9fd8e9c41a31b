"""bench.worker_phases times the worker's steps by wrapping them: every name it wraps must still
exist (a renamed step broke it silently once)."""

from __future__ import annotations

import pytest

import workers.worker as worker_module
from app.pipeline import broker, plans
from bench.worker_phases import Recorder, instrument

pytestmark = pytest.mark.unit

WRAPPED = [
    (broker, "claim"),
    (broker, "complete_success"),
    (plans, "submit"),
    (plans, "result"),
    (plans, "told_verdicts"),
    (worker_module.Worker, "_pass"),
    (worker_module.Worker, "handle"),
]


def test_every_step_it_times_is_wrapped() -> None:
    saved = [(owner, name, getattr(owner, name)) for owner, name in WRAPPED]
    try:
        instrument(Recorder())
        for owner, name, original in saved:
            assert getattr(owner, name) is not original, f"{name} is not timed"
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)


def test_a_told_verdict_counts_as_seen() -> None:
    saved = [(owner, name, getattr(owner, name)) for owner, name in WRAPPED]
    try:
        rec = Recorder()
        instrument(rec)
        assert set(plans.told_verdicts(["7:1:0:0:0:c"])) == {7}
        assert set(rec.seen) == {7}
    finally:
        for owner, name, original in saved:
            setattr(owner, name, original)
