"""workers.runtime.Wakeup: a wait on one channel ends on that channel's notification only; a
plain wait ends on any; neither outlasts its timeout."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from app.db.engines import libpq_url
from workers.runtime import INDEX_CHANNEL, VERDICTS_CHANNEL, Wakeup
from workers.worker import verdict_for

pytestmark = pytest.mark.integration
LONG_S = 60.0  # a wait that ends before this ended on a notification, not on its timeout


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


def test_a_channel_wait_skips_other_channels_and_ends_on_its_own(database_url: str) -> None:
    wakeup = Wakeup(database_url, "test", LONG_S, channels=(INDEX_CHANNEL, VERDICTS_CHANNEL))
    wakeup.listen()
    try:
        with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
            conn.execute(f"NOTIFY {INDEX_CHANNEL}")  # queued before the wait: not what it waits for
        sender = notify_soon(database_url, VERDICTS_CHANNEL)
        began = time.monotonic()
        wakeup.wait(LONG_S, channel=VERDICTS_CHANNEL)
        assert time.monotonic() - began < LONG_S / 2
        sender.join()
    finally:
        wakeup.close()


def test_a_channel_wait_times_out_when_only_others_arrive(database_url: str) -> None:
    wakeup = Wakeup(database_url, "test", LONG_S, channels=(INDEX_CHANNEL, VERDICTS_CHANNEL))
    wakeup.listen()
    try:
        sender = notify_soon(database_url, INDEX_CHANNEL, INDEX_CHANNEL)
        began = time.monotonic()
        wakeup.wait(1.0, channel=VERDICTS_CHANNEL)
        assert time.monotonic() - began >= 1.0
        sender.join()
    finally:
        wakeup.close()


def test_a_plain_wait_ends_on_any_listened_channel(database_url: str) -> None:
    wakeup = Wakeup(database_url, "test", LONG_S, channels=(INDEX_CHANNEL, VERDICTS_CHANNEL))
    wakeup.listen()
    try:
        sender = notify_soon(database_url, VERDICTS_CHANNEL)
        began = time.monotonic()
        wakeup.wait(LONG_S)
        assert time.monotonic() - began < LONG_S / 2
        sender.join()
    finally:
        wakeup.close()


def test_a_channel_wait_skips_payloads_it_does_not_want(database_url: str) -> None:
    wakeup = Wakeup(database_url, "test", LONG_S, channels=(VERDICTS_CHANNEL,))
    wakeup.listen()
    try:
        sender = notify_soon(database_url, VERDICTS_CHANNEL, VERDICTS_CHANNEL, payload="7,8")
        began = time.monotonic()
        wakeup.wait(1.0, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(9, ids))
        assert time.monotonic() - began >= 1.0
        sender.join()
        sender = notify_soon(database_url, VERDICTS_CHANNEL, payload="7,9")
        began = time.monotonic()
        wakeup.wait(LONG_S, channel=VERDICTS_CHANNEL, wanted=lambda ids: verdict_for(9, ids))
        assert time.monotonic() - began < LONG_S / 2
        sender.join()
    finally:
        wakeup.close()


@pytest.mark.parametrize(
    ("payload", "wanted"), [("", True), ("12", True), ("3,12,40", True), ("1,2", False), ("120", False)]
)
def test_a_verdicts_payload_names_the_plans_or_none(payload: str, wanted: bool) -> None:
    assert verdict_for(12, payload) is wanted
