"""The fleet tells its own lateness from the servers': a late heartbeat whose wait to be sent
was longer than its round trip counts as sent late (client/fleet/nodes.py `_count_beat`), so a
benchmark can say whether the simulator or the servers missed the beat."""

from __future__ import annotations

import gc
import threading

import pytest

from client.fleet import nodes
from client.fleet.base import FleetConfig
from client.fleet.fleet import Fleet
from client.fleet.pauses import FREEZE_EVERY, NEVER, GcPauses

pytestmark = pytest.mark.unit


class FakeClock:
    """Stands in for the `time` module in client/fleet/nodes.py: the clock reads `now`."""

    def __init__(self, now: float) -> None:
        self.now = now

    def monotonic(self) -> float:
        return self.now


def counted(monkeypatch: pytest.MonkeyPatch, beats: list[tuple[float, float, float]]) -> Fleet:
    """A fleet that counted `beats`, each (fell due, sent, answered) in seconds."""
    fleet = Fleet(FleetConfig(server="http://10.0.0.1:4646", nodes=1, nodes_per_address=0), threading.Event())
    for due, sent, answered in beats:
        monkeypatch.setattr(nodes, "time", FakeClock(answered))
        fleet._count_beat(sent, due)
    return fleet


def test_on_time_beats_count_neither_late_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = counted(monkeypatch, [(100.0, 100.0, 100.2), (100.0, 100.5, 100.9)])
    snapshot = fleet.stats.snapshot()
    assert (snapshot["on_time"], snapshot["late"], snapshot["late_sent"]) == (2, 0, 0)


def test_a_late_send_is_the_fleets_and_a_slow_answer_the_servers(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = counted(
        monkeypatch,
        [
            (100.0, 101.5, 101.6),  # sent 1.5 s late, answered in 0.1 s: the fleet's
            (100.0, 100.1, 102.0),  # sent on time, answered in 1.9 s: the servers'
            (100.0, 100.4, 100.8),  # on time
        ],
    )
    snapshot = fleet.stats.snapshot()
    assert (snapshot["on_time"], snapshot["late"], snapshot["late_sent"]) == (1, 2, 1)
    assert snapshot["heartbeat_send_delay_p99_s"] == pytest.approx(1.5)
    assert snapshot["heartbeat_p99_s"] == pytest.approx(1.9)


def test_a_beat_sent_early_has_no_send_delay(monkeypatch: pytest.MonkeyPatch) -> None:
    fleet = counted(monkeypatch, [(100.0, 99.0, 99.1)])
    assert fleet.stats.send_delays_s == [0.0]


def test_the_fleet_counts_its_garbage_collectors_pauses() -> None:
    pauses = GcPauses()
    pauses.install()
    try:
        gc.collect(0)
        gc.collect(2)
    finally:
        pauses.remove()
    gc.collect(2)  # no longer counted
    snapshot = pauses.snapshot()
    assert (snapshot["gc_collections"], snapshot["gc_full"]) == (2, 1)
    assert 0 < snapshot["gc_pause_longest_s"] <= snapshot["gc_pause_total_s"]


def test_installed_the_collector_runs_full_collections_only_when_due_and_is_put_back() -> None:
    before = gc.get_threshold()
    pauses = GcPauses()
    pauses.install()
    try:
        assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] == NEVER
        assert not pauses.collect_when_due(every_s=3600)
        full = pauses.full
        assert pauses.collect_when_due(every_s=0)
        assert pauses.full == full + 1
    finally:
        pauses.remove()
    assert gc.get_threshold() == before
    assert not pauses.collect_when_due(every_s=0)  # removed: the collector's own rules again


def test_registrations_freeze_the_heap_in_steps_and_at_the_last() -> None:
    pauses = GcPauses()
    pauses.install()
    try:
        pauses.registered(FREEZE_EVERY - 1, 2 * FREEZE_EVERY + 5)
        assert gc.get_freeze_count() == 0
        pauses.registered(FREEZE_EVERY, 2 * FREEZE_EVERY + 5)
        assert gc.get_freeze_count() > 0 and not pauses.settled
        gc.unfreeze()
        pauses.registered(2 * FREEZE_EVERY + 5, 2 * FREEZE_EVERY + 5)
        assert gc.get_freeze_count() > 0 and pauses.settled
    finally:
        pauses.remove()
    assert gc.get_freeze_count() == 0
