"""Pure pieces of the API's connection handling: the per-address counter, the hang-up monitor and
the psycopg wait switch made after gevent patches the worker."""

from __future__ import annotations

import contextlib
import socket
import threading
import time

import psycopg.waiting
import pytest

from app.api.http.blocking import IndexWatcher
from app.api.http.hangups import NO_CALLER, HangupMonitor
from workers.http_worker import ConnectionCounter, client_address, cooperative_psycopg

pytestmark = pytest.mark.unit


def test_the_counter_admits_up_to_the_limit_per_address_and_frees_slots() -> None:
    counter = ConnectionCounter(2)
    assert counter.admit("10.0.0.1") and counter.admit("10.0.0.1")
    assert not counter.admit("10.0.0.1")
    assert counter.admit("10.0.0.2")  # another address has its own allowance
    counter.release("10.0.0.1")
    assert counter.admit("10.0.0.1")
    assert counter.open("10.0.0.1") == 2


def test_a_zero_limit_admits_everyone() -> None:
    counter = ConnectionCounter(0)
    assert all(counter.admit("10.0.0.1") for _ in range(1000))


def test_client_address_is_the_host_of_a_tcp_peer() -> None:
    assert client_address(("127.0.0.1", 51234)) == "127.0.0.1"
    assert client_address(("::1", 51234, 0, 0)) == "::1"
    assert client_address("") == "unix"


def test_the_monitor_tells_a_closed_peer_from_an_idle_or_pipelining_one() -> None:
    monitor = HangupMonitor(interval_s=3600)  # checked by hand below
    server, peer = socket.socketpair()
    woken = threading.Event()
    with server, peer:
        caller = monitor.caller(server)
        with caller.waking(woken):
            assert monitor.check() == 0 and not caller()  # connected, nothing sent
            peer.sendall(b"GET / HTTP/1.1\r\n")
            assert monitor.check() == 0 and not caller()  # a pipelined request is not a hang-up
            assert server.recv(100) == b"GET / HTTP/1.1\r\n"  # and it stayed unread
            assert not woken.is_set()
            peer.close()
            assert monitor.check() == 1
            assert caller() and woken.is_set()
    monitor.stop()


def test_one_look_wakes_exactly_the_waiters_whose_callers_left() -> None:
    monitor = HangupMonitor(interval_s=3600)
    pairs = [socket.socketpair() for _ in range(200)]
    events = [threading.Event() for _ in pairs]
    callers = [monitor.caller(server) for server, _ in pairs]
    with contextlib.ExitStack() as stack:
        for caller, event in zip(callers, events, strict=True):
            stack.enter_context(caller.waking(event))
        assert monitor.watching() == 200
        for i in (3, 77, 150):
            pairs[i][1].close()
        assert monitor.check() == 3
        assert [i for i, event in enumerate(events) if event.is_set()] == [3, 77, 150]
        assert monitor.watching() == 197  # the gone ones are no longer looked at
    assert monitor.watching() == 0  # a finished wait leaves nothing behind
    for server, peer in pairs:
        server.close()
        peer.close()
    monitor.stop()


def test_the_monitor_looks_by_itself_and_a_request_without_a_socket_is_never_gone() -> None:
    monitor = HangupMonitor(interval_s=0.05)
    server, peer = socket.socketpair()
    woken = threading.Event()
    with server, peer, monitor.caller(server).waking(woken):
        peer.close()
        assert woken.wait(10)  # a liveness bound, not a timing: the monitor looks every 0.05 s
    assert monitor.caller(None) is NO_CALLER and not NO_CALLER()
    monitor.stop()


def test_a_blocking_wait_ends_when_its_caller_hangs_up(monkeypatch: pytest.MonkeyPatch) -> None:
    watcher = IndexWatcher("postgresql://unused")
    monkeypatch.setattr(watcher, "_ensure_running", lambda: None)  # no database: nothing changes
    monitor = HangupMonitor(interval_s=0.05)
    server, peer = socket.socketpair()
    with server, peer:
        caller = monitor.caller(server)
        closer = threading.Timer(0.2, peer.close)
        closer.start()
        began = time.monotonic()
        watcher.wait_beyond(["jobs"], 10, time.monotonic() + 120, caller)
        assert caller() and time.monotonic() - began < 60  # returned for the hang-up, not the deadline
        closer.join()
    monitor.stop()


def test_cooperative_psycopg_switches_off_the_c_wait() -> None:
    before = psycopg.waiting.wait
    try:
        cooperative_psycopg()
        assert psycopg.waiting.wait is psycopg.waiting.wait_poll
    finally:
        psycopg.waiting.wait = before
