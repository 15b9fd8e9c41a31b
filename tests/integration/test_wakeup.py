"""workers.runtime.Wakeup and a loop's view of workers.listener.SharedListener (one listener per
worker process): a wait on one channel ends on that channel's notification only; a plain wait
ends on any; neither outlasts its timeout. The shared listener: one connection for every loop,
each loop sees every notification, one sent while a loop was busy still ends its next wait, and
it listens again after losing its connection."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import psycopg
import pytest

from app.db.engines import libpq_url
from workers.listener import ListenerView, SharedListener
from workers.runtime import INDEX_CHANNEL, VERDICTS_CHANNEL, Wakeup
from workers.worker import verdict_for

pytestmark = pytest.mark.integration
LONG_S = 60.0  # a wait that ends before this ended on a notification, not on its timeout
Waiter = Wakeup | ListenerView
MakeWaiter = Callable[[tuple[str, ...]], Waiter]


@pytest.fixture(params=["own connection", "shared listener"])
def make_waiter(request: pytest.FixtureRequest, database_url: str) -> Iterator[MakeWaiter]:
    """Both kinds of waiter, listening, each closed afterwards."""
    opened: list[Wakeup | SharedListener] = []

    def make(channels: tuple[str, ...]) -> Waiter:
        waiter: Waiter
        if request.param == "own connection":
            waiter = Wakeup(database_url, "test", LONG_S, channels=channels)
            opened.append(waiter)
        else:
            shared = SharedListener(database_url, "test", channels)
            opened.append(shared)
            waiter = shared.view(LONG_S, 0.005)
        waiter.listen()
        return waiter

    yield make
    for item in opened:
        item.close()


def notify_soon(database_url: str, *channels: str, payload: str = "") -> threading.Thread:
    def send() -> None:
        time.sleep(0.2)
        with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
            for channel in channels:
                conn.execute("SELECT pg_notify(%s, %s)", (channel, payload))
                time.sleep(0.2)

    thread = threading.Thread(target=send, daemon=True)
    thread.start()
    return thread


def test_a_channel_wait_skips_other_channels_and_ends_on_its_own(database_url: str, make_waiter: MakeWaiter) -> None:
    wakeup = make_waiter((INDEX_CHANNEL, VERDICTS_CHANNEL))
    with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
        conn.execute(f"NOTIFY {INDEX_CHANNEL}")  # queued before the wait: not what it waits for
    sender = notify_soon(database_url, VERDICTS_CHANNEL)
    began = time.monotonic()
    wakeup.wait(LONG_S, channel=VERDICTS_CHANNEL)
    assert time.monotonic() - began < LONG_S / 2
    sender.join()


def test_a_channel_wait_times_out_when_only_others_arrive(database_url: str, make_waiter: MakeWaiter) -> None:
    wakeup = make_waiter((INDEX_CHANNEL, VERDICTS_CHANNEL))
    sender = notify_soon(database_url, INDEX_CHANNEL, INDEX_CHANNEL)
    began = time.monotonic()
    wakeup.wait(1.0, channel=VERDICTS_CHANNEL)
    assert time.monotonic() - began >= 1.0
    sender.join()


def test_a_plain_wait_ends_on_any_listened_channel(database_url: str, make_waiter: MakeWaiter) -> None:
    wakeup = make_waiter((INDEX_CHANNEL, VERDICTS_CHANNEL))
    sender = notify_soon(database_url, VERDICTS_CHANNEL)
    began = time.monotonic()
    wakeup.wait(LONG_S)
    assert time.monotonic() - began < LONG_S / 2
    sender.join()


def test_a_channel_wait_skips_payloads_it_does_not_want(database_url: str, make_waiter: MakeWaiter) -> None:
    wakeup = make_waiter((VERDICTS_CHANNEL,))
    sender = notify_soon(database_url, VERDICTS_CHANNEL, VERDICTS_CHANNEL, payload="7,8")
    began = time.monotonic()
    wakeup.wait(1.0, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(9, ids))
    assert time.monotonic() - began >= 1.0
    sender.join()
    sender = notify_soon(database_url, VERDICTS_CHANNEL, payload="7,9")
    began = time.monotonic()
    told = wakeup.wait(LONG_S, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(9, ids))
    assert time.monotonic() - began < LONG_S / 2
    assert told == ["7,9"]
    sender.join()


@pytest.mark.parametrize(
    ("payload", "wanted"),
    [
        ("", True),
        ("12", True),
        ("3,12,40", True),
        ("1,2", False),
        ("120", False),
        ("12:1:0:0:0:c", True),
        ("3:0:0:0:0:,12:0:0:0:0:", True),
        ("120:1:0:0:0:,1:12:0:0:0:", False),
    ],
)
def test_a_verdicts_payload_names_the_plans_or_none(payload: str, wanted: bool) -> None:
    assert verdict_for(12, payload) is wanted


def listen_backends(database_url: str) -> int:
    with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'corral-test-listen'"
        ).fetchone()
    assert row is not None
    return int(str(row[0]))


def test_every_loop_sees_each_notification_through_one_connection(database_url: str) -> None:
    shared = SharedListener(database_url, "test", (VERDICTS_CHANNEL,))
    views = [shared.view(LONG_S, 0.005) for _ in range(4)]
    try:
        for view in views:
            view.listen()
        assert listen_backends(database_url) == 1
        ended: list[int] = []

        def wait(i: int) -> None:
            views[i].wait(LONG_S, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(5, ids))
            ended.append(i)

        threads = [threading.Thread(target=wait, args=(i,), daemon=True) for i in range(4)]
        for thread in threads:
            thread.start()
        notify_soon(database_url, VERDICTS_CHANNEL, payload="4,5").join()
        for thread in threads:
            thread.join(LONG_S / 2)
        assert sorted(ended) == [0, 1, 2, 3]
    finally:
        shared.close()


def test_a_notification_sent_while_the_loop_was_busy_ends_its_next_wait(database_url: str) -> None:
    shared = SharedListener(database_url, "test", (VERDICTS_CHANNEL,))
    view = shared.view(LONG_S, 0.005)
    try:
        view.listen()
        notify_soon(database_url, VERDICTS_CHANNEL, payload="8").join()  # before the wait begins
        time.sleep(0.5)  # the listener thread has read it
        began = time.monotonic()
        told = view.wait(LONG_S, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(8, ids))
        assert time.monotonic() - began < LONG_S / 2
        assert told == ["8"]  # the payload that ended the wait
        began = time.monotonic()
        told = view.wait(1.0, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(8, ids))  # consumed
        assert told == []
        assert time.monotonic() - began >= 1.0
    finally:
        shared.close()


def test_the_shared_listener_listens_again_after_losing_its_connection(database_url: str) -> None:
    shared = SharedListener(database_url, "test", (VERDICTS_CHANNEL,))
    view = shared.view(LONG_S, 0.005)
    try:
        view.listen()
        with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
            conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'corral-test-listen'"
            )
        began = time.monotonic()
        told = view.wait(LONG_S, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(3, ids))
        assert time.monotonic() - began < LONG_S / 2  # told: something may have been missed
        assert told == []  # nothing told: the waiter reads the database
        assert listen_backends(database_url) == 1
        sender = notify_soon(database_url, VERDICTS_CHANNEL, payload="3:1:0:0:0:c")
        began = time.monotonic()
        told = view.wait(LONG_S, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(3, ids))
        assert time.monotonic() - began < LONG_S / 2
        assert told == ["3:1:0:0:0:c"]
        sender.join()
    finally:
        shared.close()


def test_a_wait_returns_every_wanted_payload_that_came_meanwhile(database_url: str) -> None:
    """A big plan's chunks: their verdicts may come in separate notifications while the pass goes
    on; the next wait hands over all of them, oldest first, so none has to be read again."""
    shared = SharedListener(database_url, "test", (VERDICTS_CHANNEL,))
    view = shared.view(LONG_S, 0.005)
    try:
        view.listen()
        for payload in ("5:1:0:0:0:", "9:1:0:0:0:", "6:2:0:0:0:c"):
            notify_soon(database_url, VERDICTS_CHANNEL, payload=payload).join()
        time.sleep(0.5)  # the listener thread has read them
        wanted = lambda ids: verdict_for(5, ids) or verdict_for(6, ids)  # noqa: E731
        assert view.wait(LONG_S, channel=VERDICTS_CHANNEL, wanted=wanted) == ["5:1:0:0:0:", "6:2:0:0:0:c"]
    finally:
        shared.close()
