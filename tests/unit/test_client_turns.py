"""The client lane's database turns in one API worker (app/api/http/client_turns.py): a write
that finds too long a line is refused at once, a watch's read never is, and the line's count
comes back to zero however its waiters leave."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from app.api.http.client_turns import ClientTurns, ClientTurnsFull

pytestmark = pytest.mark.unit


def wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not check():
        time.sleep(0.01)


def test_a_write_behind_a_full_line_is_refused_and_a_read_still_waits() -> None:
    turns = ClientTurns(turns=1, max_waiting=1)
    held, release = threading.Event(), threading.Event()
    done: list[str] = []

    def hold() -> None:
        with turns.write():
            held.set()
            release.wait(10)

    def queued_write() -> None:
        with turns.write():
            done.append("write")

    def queued_read() -> None:
        with turns:
            done.append("read")

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    first = threading.Thread(target=queued_write)
    first.start()
    wait_until(lambda: turns.waiting == 1)

    with pytest.raises(ClientTurnsFull, match="http_client_write_queue 1"), turns.write():
        pass
    reader = threading.Thread(target=queued_read)
    reader.start()
    wait_until(lambda: turns.waiting == 2)  # the read joined the line past the limit

    release.set()
    for thread in (holder, first, reader):
        thread.join(10)
    assert sorted(done) == ["read", "write"]
    assert turns.waiting == 0
    with turns.write():  # the line is empty again: writes are taken
        pass
