"""GC thresholds: what the leader writes into a core evaluation is what the worker applies."""

from __future__ import annotations

import pytest

from app.gc.thresholds import FORCED_ORDER, SCHEDULED, Thresholds
from app.settings.config import Settings

pytestmark = pytest.mark.unit


def test_thresholds_travel_through_the_evaluation_unchanged() -> None:
    settings = Settings(
        eval_gc_threshold_s=1,
        batch_eval_gc_threshold_s=2,
        job_gc_threshold_s=3,
        node_gc_threshold_s=4,
        deployment_gc_threshold_s=5,
    )
    chosen = Thresholds.from_settings(settings)
    assert Thresholds.from_json(chosen.to_json()) == chosen
    assert chosen.to_json() == {"eval": 1, "batch_eval": 2, "job": 3, "node": 4, "deployment": 5}


def test_defaults_are_nomads() -> None:
    defaults = Thresholds.from_settings(Settings())
    assert (defaults.eval_s, defaults.batch_eval_s, defaults.job_s, defaults.node_s, defaults.deployment_s) == (
        3600,
        86400,
        14400,
        86400,
        3600,
    )
    assert Settings().eval_gc_interval_s == Settings().job_gc_interval_s == 300


def test_forced_gc_ignores_thresholds_and_collects_nodes_last() -> None:
    assert Thresholds.forced().to_json() == dict.fromkeys(("eval", "batch_eval", "job", "node", "deployment"), 0)
    assert FORCED_ORDER[-1] == "node-gc" and set(FORCED_ORDER) == set(SCHEDULED)


def test_a_core_evaluation_without_thresholds_gets_the_configured_ones_never_zero() -> None:
    configured = Thresholds.from_settings(Settings())
    assert Thresholds.from_params(None, configured) == configured
    assert Thresholds.from_params(Thresholds.forced().to_json(), configured) == Thresholds.forced()
