"""Database turns for one API worker's client traffic: allocation updates, registrations,
service syncs, and the reads of nodes' allocation watches.

They hold at most `http_client_turns` connections at once (half the client pool by default), so a
heartbeat always finds a connection.

- Writes go first: a freed turn goes to the longest-waiting write, and to a watch's read only
  when no write waits. A placement wakes every node's watch at once (10,000 reads queued in a
  fleet of 10,000), and each node then reports its allocation running: with one line for both,
  every report waited behind the whole wake-up, and the job showed nothing running for
  minutes. A write finishes something (a status the operator reads); a read only tells a node
  what it will report.
- A write that would wait behind more than `max_waiting` other writes is answered 503 at once,
  with Retry-After, instead of joining the line: in a placement storm on a saturated server the
  line grew past the clients' 30 s timeout, so each write was done for a client that had already
  given up, and its resend queued again behind it. Only writes count against that limit: the
  watches' reads waiting behind them never get a write refused.
- A watch's read is never turned away: it waits for its turn however long the line."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from contextlib import contextmanager


class ClientTurnsFull(Exception):
    """Too many client writes already wait for a database turn in this worker."""

    def __init__(self, waiting: int, limit: int) -> None:
        queue = f"http_client_write_queue {limit}"
        super().__init__(f"{waiting} client writes already wait for a database turn ({queue}); retry later")
        self.waiting = waiting


class ClientTurns:
    """`turns` database turns; `with turns:` (a read) waits for one, `with turns.write():` waits
    ahead of every read and may be refused."""

    def __init__(self, turns: int, max_waiting: int) -> None:
        self._lock = threading.Lock()
        self._free = max(1, turns)
        self._writes: deque[threading.Event] = deque()
        self._reads: deque[threading.Event] = deque()
        self.max_waiting = max_waiting

    @property
    def waiting(self) -> int:
        """Writes and reads waiting for a turn."""
        with self._lock:
            return len(self._writes) + len(self._reads)

    @property
    def writes_waiting(self) -> int:
        with self._lock:
            return len(self._writes)

    def __enter__(self) -> None:
        self._acquire(self._reads)

    def __exit__(self, *exc: object) -> None:
        self._release()

    @contextmanager
    def write(self) -> Iterator[None]:
        with self._lock:
            if len(self._writes) >= self.max_waiting:
                raise ClientTurnsFull(len(self._writes), self.max_waiting)
        self._acquire(self._writes)
        try:
            yield
        finally:
            self._release()

    def _acquire(self, line: deque[threading.Event]) -> None:
        with self._lock:
            # A free turn is taken at once only when nobody with a better claim waits for it.
            ahead = len(self._writes) if line is self._writes else len(self._writes) + len(self._reads)
            if self._free > 0 and not ahead:
                self._free -= 1
                return
            handed = threading.Event()
            line.append(handed)
        try:
            handed.wait()
        except BaseException:
            # Killed while waiting (a hang-up, a shutdown): leave the line, or give back the
            # turn that was handed over meanwhile.
            with self._lock:
                if not handed.is_set():
                    line.remove(handed)
                    raise
            self._release()
            raise

    def _release(self) -> None:
        """Hand the turn straight to the next waiter (a write before any read), so no newcomer
        can take it in between."""
        with self._lock:
            line = self._writes or self._reads
            if line:
                line.popleft().set()
            else:
                self._free += 1
