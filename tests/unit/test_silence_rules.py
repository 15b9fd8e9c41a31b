"""What becomes of a node whose heartbeat expired (app/leader/silence_rules.py)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

import pytest

from app.leader.silence_rules import MISSED, Timeout, Window, went_silent

pytestmark = pytest.mark.unit
NOW = datetime(2030, 1, 1, tzinfo=UTC)
S = 1_000_000_000


def test_a_node_without_disconnect_windows_goes_down() -> None:
    silence = went_silent([], NOW)
    assert (silence.status, silence.description, silence.unknown, silence.timeouts) == ("down", MISSED, (), ())


def test_windows_make_it_disconnected_with_one_timeout_per_job_at_its_longest_window() -> None:
    a, b, c = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
    windows = [
        Window(a, "default", "web", 60 * S),
        Window(b, "default", "web", 300 * S),
        Window(c, "default", "api", 30 * S),
    ]
    silence = went_silent(windows, NOW)
    assert silence.status == "disconnected" and silence.description.startswith(MISSED)
    assert silence.unknown == (a, b, c)
    assert silence.timeouts == (
        Timeout("default", "api", NOW + timedelta(seconds=30)),
        Timeout("default", "web", NOW + timedelta(seconds=300)),
    )
