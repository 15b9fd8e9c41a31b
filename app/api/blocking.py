"""Blocking queries (?index=&wait=): one index watcher per process wakes every waiter.

A reader takes the tables' index and the data in one REPEATABLE READ snapshot, so the
index it returns covers exactly what it returned. Writers take indexes under one row lock
(app.db.state_index), so any later commit carries a higher index and wakes the next call."""

from __future__ import annotations

import os
import random
import select
import socket
import threading
import time
from collections.abc import Callable, Iterable
from typing import TypeVar

import psycopg
import structlog
from sqlalchemy.orm import Session, sessionmaker

from app.api.params import BlockingParams
from app.db.engines import connect_args, libpq_url
from app.db.state_index import current_index

T = TypeVar("T")
log = structlog.get_logger(__name__)

POLL_INTERVAL_S = 0.25  # fallback when a NOTIFY is lost; notifications are only hints
JITTER_FRACTION = 16  # Nomad adds up to wait/16 so many watchers do not return together
# How often a waiting blocking query looks whether its caller hung up (Nomad cancels the
# request's context at once; a waiter here notices within this long and frees its socket).
CALLER_CHECK_S = 2.0


def hung_up(sock: socket.socket | None) -> Callable[[], bool]:
    """Whether the peer of `sock` has closed its end: readable with nothing to read. A pipelined
    next request (readable with data) is not a hang-up. Without a socket (a test client), never."""
    if sock is None:
        return lambda: False

    def check() -> bool:
        try:
            readable, _, _ = select.select([sock], [], [], 0)
            return bool(readable) and sock.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    return check


class IndexWatcher:
    """Tracks state_index in the background; waiters sleep until their tables move."""

    def __init__(self, database_url: str) -> None:
        self._url = libpq_url(database_url)
        self._cond = threading.Condition()
        self._indexes: dict[str, int] = {}
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._stopped = threading.Event()
        self._listening = False
        self.released = False  # shutting down: waiters answer with what they have

    def release_waiters(self) -> None:
        """Wake every waiting blocking query for good (the server is shutting down)."""
        with self._cond:
            self.released = True
            self._cond.notify_all()

    def stop(self) -> None:
        """End the background thread (used when an app or a test database goes away)."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def wait_beyond(
        self, tables: Iterable[str], index: int, deadline: float, gone: Callable[[], bool] = lambda: False
    ) -> None:
        """Return once any of `tables` has an index above `index`, at the deadline, or once
        `gone()` says the caller hung up (checked every CALLER_CHECK_S)."""
        self._ensure_running()
        names = list(tables)
        with self._cond:
            while not self.released and max((self._indexes.get(t, 0) for t in names), default=0) <= index:
                remaining = deadline - time.monotonic()
                if remaining <= 0 or gone():
                    return
                self._cond.wait(min(remaining, CALLER_CHECK_S))

    def _ensure_running(self) -> None:
        # gunicorn forks after import: a thread started in the parent does not exist here.
        if self._thread is not None and self._thread.is_alive() and self._pid == os.getpid():
            return
        with self._cond:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="index-watcher", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        lost = 0
        while not self._stopped.is_set():
            try:
                self._watch()
            except psycopg.Error as err:
                if self._stopped.is_set():
                    return
                if self._listening:
                    lost, self._listening = 0, False
                if not lost:  # once per outage, not every second of it
                    log.warning("index watcher lost its connection; reconnecting", error=str(err))
                lost += 1
                self._stopped.wait(1.0)

    def _watch(self) -> None:
        kwargs = {k: v for k, v in connect_args("api").items() if k != "application_name"}
        with psycopg.connect(self._url, autocommit=True, application_name="corral-api-index-watcher", **kwargs) as conn:
            conn.execute("LISTEN corral_index")
            self._listening = True
            while not self._stopped.is_set():
                rows = conn.execute("SELECT name, value FROM state_index").fetchall()
                indexes = {str(name): int(value) for name, value in rows}
                if indexes != self._indexes:
                    # Only a change wakes the waiters: thousands of them must not all run
                    # every poll interval for nothing.
                    with self._cond:
                        self._indexes = indexes
                        self._cond.notify_all()
                for _ in conn.notifies(timeout=POLL_INTERVAL_S, stop_after=1):
                    pass


def blocking_read(
    factory: sessionmaker[Session],
    watcher: IndexWatcher,
    tables: list[str],
    params: BlockingParams,
    read: Callable[[Session], T],
    gone: Callable[[], bool] = lambda: False,
) -> tuple[T, int]:
    """Run `read` in a consistent snapshot once the tables' index passes params.index (or the
    wait ends, the server shuts down, or the caller hangs up)."""
    wait = params.wait_s + random.Random().uniform(0, params.wait_s / JITTER_FRACTION)
    deadline = time.monotonic() + wait
    while True:
        with factory() as session, session.begin():
            index = current_index(session, tables)
            seen = params.index
            if seen is None or index > seen or watcher.released or time.monotonic() >= deadline or gone():
                return read(session), index
        watcher.wait_beyond(tables, seen, deadline, gone)
