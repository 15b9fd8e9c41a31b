"""Database turns for one API worker's client traffic: allocation updates, registrations,
service syncs, and the reads of nodes' allocation watches.

They hold at most half the client pool at once, so a heartbeat always finds a connection. A
client write that would wait behind more than `max_waiting` others is answered 503 at once,
with Retry-After, instead of joining the line: in a placement storm on a saturated server the
line grew past the clients' 30 s timeout, so each write was done for a client that had already
given up, and its resend queued again behind it. A watch's read is never turned away: it waits
for its turn however long the line."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager


class ClientTurnsFull(Exception):
    """Too many client requests already wait for a database turn in this worker."""

    def __init__(self, waiting: int, limit: int) -> None:
        queue = f"http_client_write_queue {limit}"
        super().__init__(f"{waiting} client requests already wait for a database turn ({queue}); retry later")
        self.waiting = waiting


class ClientTurns:
    """`turns` database turns; `with turns:` waits for one, `with turns.write():` may be refused."""

    def __init__(self, turns: int, max_waiting: int) -> None:
        self._free = threading.BoundedSemaphore(max(1, turns))
        self._count = threading.Lock()
        self.max_waiting = max_waiting
        self.waiting = 0

    def __enter__(self) -> None:
        self._acquire()

    def __exit__(self, *exc: object) -> None:
        self._free.release()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._count:
            if self.waiting >= self.max_waiting:
                raise ClientTurnsFull(self.waiting, self.max_waiting)
        self._acquire()
        try:
            yield
        finally:
            self._free.release()

    def _acquire(self) -> None:
        with self._count:
            self.waiting += 1
        try:
            self._free.acquire()
        finally:
            with self._count:
                self.waiting -= 1
