"""One LISTEN connection per worker process, shared by its scheduling loops.

Each loop had a listener of its own: with four loops per process, every NOTIFY (a plan's verdict,
a moved state index) woke four backends and four client threads per process to read the same
message. Now one thread per process reads the notifications and keeps the latest few in order;
each loop keeps a cursor into them and waits on a condition. Notifications stay hints: a waiter
re-checks the database whatever woke it, and a waiter that may have missed one (its cursor fell
behind what is kept, or the listener is away) returns at once or polls."""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

import psycopg
import structlog

from app.db.engines import connect_args, libpq_url
from workers.loops import Streak

log = structlog.get_logger(__name__)

KEPT = 1024  # notifications kept for loops that were busy meanwhile; far more than arrive during one pass
RECONNECT_S = 1.0  # after the connection failed: wait this long, polling meanwhile, then listen again


@dataclass(frozen=True)
class Notice:
    seq: int
    channel: str
    payload: str


class SharedListener:
    """LISTENs on `channels` from one thread; `view()` gives each loop its own cursor."""

    def __init__(self, database_url: str, role: str, channels: tuple[str, ...]) -> None:
        self._url, self._role, self._channels = libpq_url(database_url), role, channels
        self._changed = threading.Condition()
        self._kept: deque[Notice] = deque(maxlen=KEPT)
        self._seq = 0
        self._listening = False  # False: notifications may be missed; waiters poll
        self._closed = False
        self._thread: threading.Thread | None = None
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None
        self._streak = Streak("the shared change listener (polling meanwhile)", role=role)

    def start(self) -> None:
        """Listen before the first claim, so nothing sent from then on is missed."""
        with self._changed:
            if self._thread is not None:
                return
            self._connect()
            self._thread = threading.Thread(target=self._run, name=f"{self._role}-listener", daemon=True)
            self._thread.start()

    def view(self, poll_s: float, debounce_s: float) -> ListenerView:
        return ListenerView(self, poll_s, debounce_s)

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._conn is not None:
            self._conn.close()

    # --- the reading thread ---------------------------------------------------------------

    def _connect(self) -> None:
        try:
            args = connect_args(self._role, f"corral-{self._role}-listen")
            conn = psycopg.connect(self._url, autocommit=True, **args)
            for channel in self._channels:
                conn.execute(f"LISTEN {channel}")
        except psycopg.Error as err:
            self._streak.failed(err)
            return
        self._conn, self._listening = conn, True
        self._streak.succeeded()

    def _run(self) -> None:
        while not self._closed:
            conn = self._conn
            if conn is None or not self._listening:
                time.sleep(RECONNECT_S)
                self._connect()
                if self._listening:  # may have missed some meanwhile: every waiter re-checks
                    self._publish(Notice(0, "", ""))
                continue
            try:
                for n in conn.notifies(timeout=0.5):
                    self._publish(Notice(0, n.channel, n.payload))
            except psycopg.Error as err:
                self._streak.failed(err)
                with self._changed:
                    self._listening = False
                conn.close()

    def _publish(self, notice: Notice) -> None:
        with self._changed:
            self._seq += 1
            self._kept.append(Notice(self._seq, notice.channel, notice.payload))
            self._changed.notify_all()

    # --- for the views ----------------------------------------------------------------------

    def latest(self) -> int:
        with self._changed:
            return self._seq

    def await_after(self, since: int, deadline: float, wanted: Callable[[Notice], bool]) -> tuple[bool, int, list[str]]:
        """(True, newest seq, the wanted notices' payloads, oldest first) once a notice after
        `since` is wanted or may have been missed (a gap: `since` is older than what is kept;
        the listener reconnected); else (False, the seq read up to, []) at the deadline: the
        unwanted notices are dropped."""
        with self._changed:
            while not self._closed:
                if self._seq > since:
                    missed, told = self._wanted_after(since, wanted)
                    if missed or told or self._kept[0].seq > since + 1:
                        return True, self._seq, told
                    since = self._seq
                left = deadline - time.monotonic()
                if left <= 0:
                    return False, since, []
                self._changed.wait(left if self._listening else min(left, RECONNECT_S))
            return True, self._seq, []

    def _wanted_after(self, since: int, wanted: Callable[[Notice], bool]) -> tuple[bool, list[str]]:
        """Among the notices after `since`: whether the listener reconnected (some may be
        missing), and the wanted ones' payloads, oldest first."""
        missed, told = False, []
        for notice in reversed(self._kept):  # newest first; only those after `since`
            if notice.seq <= since:
                break
            if notice.channel == "":
                missed = True
            elif wanted(notice):
                told.append(notice.payload)
        told.reverse()
        return missed, told


class ListenerView:
    """One loop's side of the shared listener, with Wakeup's interface: wait() until a
    notification or the (jittered) poll interval; with `channel` (and `wanted`) only those end
    it; without, any does, after a short debounce so a burst of commits is one wake-up."""

    def __init__(self, shared: SharedListener, poll_s: float, debounce_s: float) -> None:
        self._shared, self._poll_s, self._debounce_s = shared, poll_s, debounce_s
        self._random = random.Random()
        self._cursor = 0

    def listen(self) -> None:
        self._shared.start()
        self._cursor = self._shared.latest()

    def wait(
        self, timeout: float | None = None, *, channel: str | None = None, wanted: Callable[[str], bool] | None = None
    ) -> list[str]:
        """As Wakeup.wait: the payloads of the wanted notifications on `channel` that ended the
        wait (none when the poll interval or a possible miss did)."""
        limit = timeout if timeout is not None else self._poll_s * (0.5 + self._random.random())
        accept = wanted or (lambda _payload: True)

        def match(n: Notice) -> bool:
            return channel is None or (n.channel == channel and accept(n.payload))

        woke, self._cursor, told = self._shared.await_after(self._cursor, time.monotonic() + limit, match)
        if woke and channel is None and self._debounce_s:  # let a burst settle, then skip past it
            time.sleep(self._debounce_s)
            self._cursor = self._shared.latest()
        return told if channel is not None else []

    def close(self) -> None:
        """The shared listener is closed by its owner (run_worker), not by one loop."""
