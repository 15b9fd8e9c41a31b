"""When the applier waits for the next plan's notification instead of reading the queue again
(workers/applier.py's _drained), and that its wait consumes the notifications that came with
the one that woke it (workers/runtime.py's Wakeup without a debounce)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import psycopg
import pytest

from app.pipeline.plan_apply.applier import Pending, Prepared
from app.pipeline.plan_apply.plan_overlay import Effects
from app.pipeline.plan_apply.plan_writes import Known
from app.structs import Plan
from workers.applier import _drained
from workers.runtime import PLANS_CHANNEL, Wakeup

pytestmark = pytest.mark.unit


class FakeListener:
    """A LISTEN connection whose notifications are already received: notifies() hands them out."""

    def __init__(self, waiting: int) -> None:
        self.waiting = [psycopg.Notify(PLANS_CHANNEL, "", 1) for _ in range(waiting)]
        self.closed = False
        self.timeouts: list[float | None] = []

    def notifies(self, *, timeout: float | None = None, stop_after: int | None = None) -> Iterator[psycopg.Notify]:
        self.timeouts.append(timeout)
        while self.waiting and (stop_after is None or stop_after > 0):
            stop_after = None if stop_after is None else stop_after - 1
            yield self.waiting.pop(0)


def wakeup(listener: FakeListener | None) -> Wakeup:
    waiting = Wakeup("postgresql+psycopg://nobody@/none", "applier", 60.0, channels=(PLANS_CHANNEL,), debounce_s=0)
    waiting._conn = listener  # type: ignore[assignment]  # a stand-in for the LISTEN connection
    return waiting


def prepared(plans: int) -> Prepared:
    pending = [Pending(i, Plan(uuid.uuid4(), 50, 0), uuid.uuid4(), "default", "web", True) for i in range(plans)]
    return Prepared(pending, [], [], Known(set(), {}, {}), Effects({}, {}))


def test_an_empty_queue_or_a_partial_batch_waits_for_the_next_notification() -> None:
    listening = wakeup(FakeListener(0))
    assert _drained(None, 64, listening)
    assert _drained(prepared(3), 64, listening)
    # A full batch may have left plans behind: read again at once.
    assert not _drained(prepared(64), 64, listening)


def test_without_the_listener_a_partial_batch_reads_again_at_once() -> None:
    deaf = wakeup(None)
    assert not deaf.listening
    assert not _drained(prepared(3), 64, deaf)
    assert _drained(None, 64, deaf)  # an empty queue still waits (and polls)


def test_a_wait_without_debounce_consumes_the_notifications_already_received() -> None:
    listener = FakeListener(3)
    waiting = wakeup(listener)
    waiting.wait()
    assert listener.waiting == []
    assert listener.timeouts[1:] == [0]  # read what is there, without waiting for more
