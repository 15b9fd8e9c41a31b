"""workers/leader.py wires every leader duty on its interval."""

from __future__ import annotations

import pytest

from app.settings.config import Settings
from workers.leader import duties

pytestmark = pytest.mark.unit


def test_every_duty_is_wired_on_its_interval() -> None:
    settings = Settings()
    wired = {name: seconds for name, (seconds, _) in duties(settings).items()}
    assert wired == {
        "reap-failed-evaluations": 5.0,
        "sweep-max-plan-blocked": 60.0,
        "node-lifecycle": 1.0,
        "periodic-launch": 1.0,
        "compact-state-index": 1.0,
        "deployment-watch": 1.0,
        "event-gc": settings.event_gc_interval_s,
        "eval-gc": settings.eval_gc_interval_s,
        "job-gc": settings.job_gc_interval_s,
        "node-gc": settings.node_gc_interval_s,
        "deployment-gc": settings.deployment_gc_interval_s,
    }
