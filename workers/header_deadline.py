"""The deadline for a request's line and headers (and for an idle keep-alive connection), which
cuts off a client that trickles header lines. It is the client's deadline, not ours: when it
passes while the client's bytes sit unread in the socket, the client was on time and this worker
was late to read them (its loop busy with other greenlets under a storm). Closing then threw
away a request that had arrived whole (a heartbeat, say) and reset the connection; instead the
deadline is extended, one step at a time, while unread bytes wait, up to a hard cap, so a
trickling client gains at most the cap."""

from __future__ import annotations

import fcntl
import socket
import struct
import termios
import time
from collections.abc import Callable
from types import TracebackType
from typing import Protocol

import gevent

EXTENSION_STEP_S = 1.0
# How much longer than the deadline a connection whose bytes wait unread may be kept, in
# multiples of the deadline: a busy worker gets that long to reach them.
EXTENSION_CAP = 3.0


class _Timer(Protocol):
    """What this module uses of a gevent loop's timer watcher."""

    def start(self, callback: Callable[[], None]) -> None: ...

    def close(self) -> None: ...


class _Reader(Protocol):
    """The greenlet reading the request (what this module uses of it)."""

    def throw(self, error: BaseException) -> object: ...


class HeaderDeadlineExpired(BaseException):
    """Thrown into the reading greenlet; BaseException, as gevent's Timeout is, so no
    `except Exception` on the way swallows it."""


def unread_bytes(sock: socket.socket) -> int:
    """Bytes the kernel holds for `sock` that nobody has read yet (0 when it cannot tell)."""
    try:
        raw = fcntl.ioctl(sock.fileno(), termios.FIONREAD, b"\0\0\0\0")
    except (OSError, ValueError):  # closed, or not a stream socket
        return 0
    return int(struct.unpack("i", raw)[0])


class HeaderDeadline:
    """Context manager around one read of a request's line and headers (gunicorn's
    timeout_ctx). On expiry the read ends silently, as gevent.Timeout(seconds, False) did, and
    gunicorn closes the connection."""

    def __init__(self, sock: socket.socket | None, seconds: float) -> None:
        self._sock = sock
        self._seconds = seconds
        self._cap_at = 0.0
        self._timer: _Timer | None = None
        self._greenlet: _Reader | None = None
        self.extended = 0  # how many steps the deadline was extended (tests, logs)

    def __enter__(self) -> HeaderDeadline:
        self._greenlet = gevent.getcurrent()
        self._cap_at = time.monotonic() + self._seconds * (1 + EXTENSION_CAP)
        self._arm(self._seconds)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> bool:
        self._disarm()
        return isinstance(error, HeaderDeadlineExpired) and error.args == (id(self),)

    def _arm(self, seconds: float) -> None:
        timer: _Timer = gevent.get_hub().loop.timer(seconds)
        timer.start(self._expired)
        self._timer = timer

    def _disarm(self) -> None:
        if self._timer is not None:
            self._timer.close()
            self._timer = None

    def _expired(self) -> None:
        """Runs in the hub. The client's bytes still waiting for us: extend; otherwise end the read."""
        self._disarm()
        waiting = self._sock is not None and unread_bytes(self._sock) > 0
        if waiting and time.monotonic() < self._cap_at:
            self.extended += 1
            self._arm(EXTENSION_STEP_S)
            return
        if self._greenlet is not None:
            self._greenlet.throw(HeaderDeadlineExpired(id(self)))
