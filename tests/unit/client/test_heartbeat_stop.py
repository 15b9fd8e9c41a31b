"""Heartbeat stop: a group's disconnect.stop_on_client_after (or the older
stop_after_client_disconnect) says how long out of contact its allocation may keep running."""

from __future__ import annotations

from typing import Any

import pytest

from client.allocs.disconnect import due, stop_after_s

pytestmark = pytest.mark.unit
NANOS = 1_000_000_000


def _alloc(**group: Any) -> dict[str, Any]:
    return {"TaskGroup": "g", "Job": {"TaskGroups": [{"Name": "other"}, {"Name": "g", **group}]}}


def test_either_spelling_sets_the_delay() -> None:
    assert stop_after_s(_alloc(Disconnect={"StopOnClientAfter": 30 * NANOS})) == 30.0
    assert stop_after_s(_alloc(StopAfterClientDisconnect=5 * NANOS)) == 5.0
    assert stop_after_s(_alloc(Disconnect={"LostAfter": NANOS})) is None
    assert stop_after_s({"TaskGroup": "g"}) is None


def test_due_only_after_the_delay_since_the_last_contact() -> None:
    alloc = _alloc(Disconnect={"StopOnClientAfter": 10 * NANOS})
    assert not due(alloc, last_contact=100.0, now=109.0)
    assert due(alloc, last_contact=100.0, now=110.5)
    assert not due(alloc, last_contact=None, now=1e9)  # never in contact: nothing to measure from
    assert not due(_alloc(), last_contact=0.0, now=1e9)
