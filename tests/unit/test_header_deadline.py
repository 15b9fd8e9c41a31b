"""The header deadline (workers.header_deadline) on real gevent sockets: it ends a read the
client is late for, and waits while the client's bytes sit unread because the worker is busy
(up to a cap)."""

from __future__ import annotations

import gevent
import gevent.socket
import pytest

from workers import header_deadline
from workers.header_deadline import HeaderDeadline, unread_bytes

pytestmark = pytest.mark.unit


def _read_under(deadline: HeaderDeadline, sock: gevent.socket.socket, busy_s: float) -> bytes | None:
    """What gunicorn's keep-alive loop does, after `busy_s` of being away (its loop busy)."""
    got = None
    with deadline:
        gevent.sleep(busy_s)
        got = sock.recv(1024)
    return got


def test_a_silent_client_is_cut_off_at_the_deadline() -> None:
    ours, theirs = gevent.socket.socketpair()
    try:
        deadline = HeaderDeadline(ours, 0.1)
        assert gevent.spawn(_read_under, deadline, ours, 0).get(timeout=10) is None
        assert deadline.extended == 0
    finally:
        ours.close()
        theirs.close()


def test_bytes_waiting_unread_extend_the_deadline_until_the_worker_reads_them() -> None:
    ours, theirs = gevent.socket.socketpair()
    try:
        theirs.sendall(b"PUT /v1/node/x/heartbeat HTTP/1.1\r\n\r\n")  # on time, whole
        assert unread_bytes(ours) > 0
        deadline = HeaderDeadline(ours, 0.1)
        # The worker gets to the socket only after the deadline: the request is read, not dropped.
        got = gevent.spawn(_read_under, deadline, ours, 0.3).get(timeout=10)
        assert got is not None and got.startswith(b"PUT ")
        assert deadline.extended >= 1
    finally:
        ours.close()
        theirs.close()


def test_waiting_bytes_extend_the_deadline_only_up_to_the_cap() -> None:
    ours, theirs = gevent.socket.socketpair()
    try:
        theirs.sendall(b"GET / HTTP/1.1\r\nX-Slow: 1\r\n")
        deadline = HeaderDeadline(ours, 0.1)
        # Never read: the cap (the deadline times 1 + EXTENSION_CAP) ends it all the same.
        assert gevent.spawn(_read_under, deadline, ours, 60).get(timeout=30) is None
        assert 1 <= deadline.extended <= header_deadline.EXTENSION_CAP / header_deadline.EXTENSION_STEP_S + 1
    finally:
        ours.close()
        theirs.close()


def test_unread_bytes_of_a_closed_socket_is_zero() -> None:
    ours, theirs = gevent.socket.socketpair()
    ours.close()
    theirs.close()
    assert unread_bytes(ours) == 0
