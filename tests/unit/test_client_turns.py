"""The client lane's database turns in one API worker (app/api/http/client_turns.py): a write
that finds too long a line of writes is refused at once, a watch's read never is, a freed turn
goes to a waiting write before any read, and the line's count comes back to zero however its
waiters leave."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from pydantic import ValidationError

from app.api.http.client_turns import ClientTurns, ClientTurnsFull
from app.settings.config import Settings, describe

pytestmark = pytest.mark.unit


def wait_until(check: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not check():
        time.sleep(0.01)


def holding(turns: ClientTurns, write: bool = True) -> tuple[threading.Thread, threading.Event]:
    """A thread that takes a turn (a write's, or a read's) and keeps it until the event is set."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with turns.write() if write else turns:
            held.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert held.wait(10)
    return holder, release


def test_a_write_behind_a_full_line_is_refused_and_a_read_still_waits() -> None:
    turns = ClientTurns(turns=1, max_waiting=1)
    done: list[str] = []

    def queued_write() -> None:
        with turns.write():
            done.append("write")

    def queued_read() -> None:
        with turns:
            done.append("read")

    holder, release = holding(turns)
    first = threading.Thread(target=queued_write)
    first.start()
    wait_until(lambda: turns.waiting == 1)

    with pytest.raises(ClientTurnsFull, match="http_client_write_queue 1"), turns.write():
        pass
    reader = threading.Thread(target=queued_read)
    reader.start()
    wait_until(lambda: turns.waiting == 2)  # the read joined the line past the limit
    assert turns.writes_waiting == 1

    release.set()
    for thread in (holder, first, reader):
        thread.join(10)
    assert sorted(done) == ["read", "write"]
    assert turns.waiting == 0
    with turns.write():  # the line is empty again: writes are taken
        pass


def test_a_freed_turn_goes_to_a_waiting_write_before_reads_that_came_first() -> None:
    turns = ClientTurns(turns=1, max_waiting=8)
    order: list[str] = []

    def read(name: str) -> None:
        with turns:
            order.append(name)

    def write() -> None:
        with turns.write():
            order.append("write")

    holder, release = holding(turns)
    readers = [threading.Thread(target=read, args=(f"read{i}",)) for i in range(3)]
    for i, reader in enumerate(readers):
        reader.start()
        wait_until(lambda i=i: turns.waiting == i + 1)  # type: ignore[misc]
    writer = threading.Thread(target=write)
    writer.start()
    wait_until(lambda: turns.writes_waiting == 1)

    release.set()
    for thread in (holder, writer, *readers):
        thread.join(10)
    assert order == ["write", "read0", "read1", "read2"]  # reads keep their own order
    assert turns.waiting == 0


def test_reads_waiting_never_get_a_write_refused() -> None:
    turns = ClientTurns(turns=1, max_waiting=1)
    done: list[str] = []

    def read() -> None:
        with turns:
            done.append("read")

    def write() -> None:
        with turns.write():
            done.append("write")

    holder, release = holding(turns, write=False)
    readers = [threading.Thread(target=read) for _ in range(5)]
    for reader in readers:
        reader.start()
    wait_until(lambda: turns.waiting == 5)
    writer = threading.Thread(target=write)
    writer.start()  # five reads wait, no write: it joins the line (ahead of them)
    wait_until(lambda: turns.writes_waiting == 1)

    release.set()
    for thread in (holder, writer, *readers):
        thread.join(10)
    assert done[0] == "write" and done.count("read") == 5


class Interrupted(BaseException):
    pass


def _killed_while_waiting(
    monkeypatch: pytest.MonkeyPatch, turns: ClientTurns, meanwhile: Callable[[threading.Event], None]
) -> None:
    """Wait for a read's turn, killed in the wait (a hang-up, a shutdown) once `meanwhile` ran."""

    def interrupted_wait(self: threading.Event, timeout: float | None = None) -> bool:
        meanwhile(self)
        raise Interrupted()

    with monkeypatch.context() as patched:
        patched.setattr(threading.Event, "wait", interrupted_wait)
        with pytest.raises(Interrupted), turns:
            pass


def test_a_waiter_killed_in_line_leaves_it(monkeypatch: pytest.MonkeyPatch) -> None:
    turns = ClientTurns(turns=1, max_waiting=8)
    killed: list[threading.Event] = []
    with turns.write():
        _killed_while_waiting(monkeypatch, turns, killed.append)
        assert len(killed) == 1
        assert turns.waiting == 0
    assert turns._free == 1


def test_a_turn_handed_to_a_waiter_as_it_is_killed_is_given_back(monkeypatch: pytest.MonkeyPatch) -> None:
    turns = ClientTurns(turns=1, max_waiting=8)
    turns._acquire(turns._writes)  # a holder, which leaves while the read waits

    def handed(waiter: threading.Event) -> None:
        turns._release()  # the holder leaves and hands this waiter the turn
        assert waiter.is_set()

    _killed_while_waiting(monkeypatch, turns, handed)
    assert turns.waiting == 0
    assert turns._free == 1  # back, once: neither lost nor doubled


def test_the_turns_are_half_the_client_pool_unless_http_client_turns_says() -> None:
    assert Settings(http_node_pool_size=4).client_turns == 2
    assert Settings(http_node_pool_size=1).client_turns == 1  # one turn at least, as ever
    assert Settings(http_node_pool_size=4, http_client_turns=1).client_turns == 1
    assert Settings(http_node_pool_size=16, http_client_turns=3).client_turns == 3


@pytest.mark.parametrize("turns", [4, 5])
def test_turns_that_would_leave_heartbeats_no_connection_are_refused_naming_the_setting(turns: int) -> None:
    with pytest.raises(ValidationError) as raised:
        Settings(http_node_pool_size=4, http_client_turns=turns)
    (problem,) = raised.value.errors()
    assert problem["loc"] == ("http_client_turns",)
    assert "must be below http_node_pool_size (4)" in problem["msg"]
    assert describe(raised.value).startswith("CORRAL_HTTP_CLIENT_TURNS: ")
