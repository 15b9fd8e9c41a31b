"""Pure pieces of the API's connection handling: the per-address counter, hang-up detection and
the psycopg wait switch made after gevent patches the worker."""

from __future__ import annotations

import socket

import psycopg.waiting
import pytest

from app.api.blocking import hung_up
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


def test_hung_up_tells_a_closed_peer_from_an_idle_or_pipelining_one() -> None:
    server, peer = socket.socketpair()
    with server, peer:
        check = hung_up(server)
        assert not check()  # connected, nothing sent
        peer.sendall(b"GET / HTTP/1.1\r\n")
        assert not check()  # a pipelined request is not a hang-up, and stays unread
        assert server.recv(100) == b"GET / HTTP/1.1\r\n"
        peer.close()
        assert check()
    assert not hung_up(None)()


def test_cooperative_psycopg_switches_off_the_c_wait() -> None:
    before = psycopg.waiting.wait
    try:
        cooperative_psycopg()
        assert psycopg.waiting.wait is psycopg.waiting.wait_poll
    finally:
        psycopg.waiting.wait = before
