"""bench.fleet's samples: the window's figures end with the window, and what the probes sample
during the big job after it is reported apart."""

from __future__ import annotations

import pytest

from bench.fleet import Samples

pytestmark = pytest.mark.unit


def test_a_mark_keeps_the_windows_samples_and_since_gives_what_came_after() -> None:
    samples = Samples()
    samples.add("health", 0.01)
    samples.add("health", 0.02)
    samples.fail("health")
    window = samples.mark()
    samples.add("health", 0.5)
    samples.fail("health")
    samples.add("read", 0.1)
    assert window.get("health") == [0.01, 0.02] and window.errors == {"health": 1}
    assert window.get("read") == []
    assert samples.since(window, "health") == [0.5]
    assert samples.since(window, "read") == [0.1]
    assert samples.errors["health"] - window.errors["health"] == 1
