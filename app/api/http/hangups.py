"""Noticing callers that hung up while their request waits (blocking queries, event streams).

Nomad cancels a request's context the moment its caller goes. Here a waiting request holds its
socket, so something must look at it. With a fleet connected that is thousands of sockets: each
waiter waking every couple of seconds to look at its own costs thousands of wake-ups a second.
Instead one monitor per process keeps every waiting socket in one poll set, looks at all of them
in one poll(2) every CHECK_INTERVAL_S, and wakes only the waiters whose caller has gone."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from collections.abc import Iterator
from typing import Protocol

import structlog

log = structlog.get_logger(__name__)

CHECK_INTERVAL_S = 2.0
# The peer closed its end (Linux: POLLRDHUP), or the socket failed. Readable data alone is a
# pipelined next request, not a hang-up, so POLLIN is not asked for where POLLRDHUP exists.
RDHUP = getattr(select, "POLLRDHUP", 0)
GONE_EVENTS = select.POLLHUP | select.POLLERR | select.POLLNVAL | RDHUP
WATCHED_EVENTS = GONE_EVENTS if RDHUP else GONE_EVENTS | select.POLLIN


def _original_poll() -> type[select.poll]:
    """The operating system's poll, even in a gevent-patched process: the monitor asks with a
    zero timeout, so it never blocks, and gevent's would build a watcher per socket each time."""
    try:
        from gevent.monkey import get_original
    except ImportError:  # pragma: no cover - gevent is a dependency; threads work the same
        return select.poll
    original: type[select.poll] = get_original("select", "poll")
    return original


class Wakeable(Protocol):
    def set(self) -> None: ...


class Caller:
    """The peer of one request. Calling it says whether it has hung up; `waking(event)` has the
    monitor set `event` the moment it finds the peer gone, so a waiter needs no timer of its own."""

    def gone(self) -> bool:
        return False

    def __call__(self) -> bool:
        return self.gone()

    def waking(self, event: Wakeable) -> contextlib.AbstractContextManager[None]:
        return contextlib.nullcontext()


NO_CALLER = Caller()  # a request with no socket (the test client): never gone


class SocketCaller(Caller):
    def __init__(self, sock: socket.socket, monitor: HangupMonitor) -> None:
        self._sock = sock
        self._monitor = monitor
        self._gone = False
        self._events: list[Wakeable] = []
        self.fd = -1  # while the monitor watches it

    def gone(self) -> bool:
        return self._gone

    def waking(self, event: Wakeable) -> contextlib.AbstractContextManager[None]:
        return self._watched(event)

    @contextlib.contextmanager
    def _watched(self, event: Wakeable) -> Iterator[None]:
        self._events.append(event)
        self._monitor.add(self)
        try:
            yield
        finally:
            self._events.remove(event)
            if not self._events:
                self._monitor.discard(self)

    def fileno(self) -> int:
        return self._sock.fileno()

    def mark_gone(self) -> None:
        self._gone = True
        for event in list(self._events):
            event.set()

    def peer_closed(self) -> bool:
        """Without POLLRDHUP: readable with nothing to read means the peer closed its end."""
        try:
            return self._sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b""
        except BlockingIOError:
            return False
        except OSError:
            return True


class HangupMonitor:
    """One per process (gunicorn forks after import: a monitor notices and starts afresh)."""

    def __init__(self, interval_s: float = CHECK_INTERVAL_S) -> None:
        self._interval_s = interval_s
        self._lock = threading.Lock()
        self._callers: dict[int, SocketCaller] = {}
        self._poll = _original_poll()()
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._stopped = threading.Event()

    def caller(self, sock: socket.socket | None) -> Caller:
        return NO_CALLER if sock is None else SocketCaller(sock, self)

    def watching(self) -> int:
        return len(self._callers)

    def add(self, caller: SocketCaller) -> None:
        self._ensure_running()
        try:
            fd = caller.fileno()
        except OSError:
            caller.mark_gone()
            return
        with self._lock:
            if fd in self._callers:
                self._poll.modify(fd, WATCHED_EVENTS)
            else:
                self._poll.register(fd, WATCHED_EVENTS)
            self._callers[fd] = caller
            caller.fd = fd

    def discard(self, caller: SocketCaller) -> None:
        with self._lock:
            if caller.fd >= 0 and self._callers.get(caller.fd) is caller:
                del self._callers[caller.fd]
                with contextlib.suppress(KeyError, ValueError, OSError):
                    self._poll.unregister(caller.fd)
            caller.fd = -1

    def check(self) -> int:
        """Look at every watched socket once; wake the waiters of those whose peer has gone.
        Returns how many were found gone."""
        with self._lock:
            ready = self._poll.poll(0)
            found: list[SocketCaller] = []
            for fd, events in ready:
                caller = self._callers.get(fd)
                if caller is None:
                    continue
                if events & GONE_EVENTS or caller.peer_closed():
                    found.append(caller)
                    caller.fd = -1
                    del self._callers[fd]
                    with contextlib.suppress(KeyError, ValueError, OSError):
                        self._poll.unregister(fd)
        for caller in found:
            caller.mark_gone()
        return len(found)

    def _ensure_running(self) -> None:
        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                if self._pid != os.getpid():  # a forked child: the parent's sockets are not ours
                    self._callers.clear()
                    self._poll = _original_poll()()
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="hangup-monitor", daemon=True)
                self._thread.start()

    def stop(self) -> None:
        """End the looking (an app or a test going away); waiters already woken are unaffected."""
        self._stopped.set()
        if self._thread is not None and self._pid == os.getpid():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stopped.wait(self._interval_s):
            try:
                self.check()
            except Exception:  # never let one bad socket end the looking for everyone else
                log.exception("hang-up monitor check failed")
