"""What every long-running role shares: database, schema check, signals, and wake-ups."""

from __future__ import annotations

import gc
import random
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import structlog

from app.config import Settings
from app.db.database import open_database
from app.db.engines import connect_args, libpq_url, make_engine
from app.db.schema import ensure_current

log = structlog.get_logger(__name__)


def stop_on_signals() -> threading.Event:
    """SIGTERM/SIGINT ask the role to finish what it is doing and exit."""
    stop = threading.Event()

    def _handler(signum: int, _frame: object) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _handler)
    # Start-up's objects (modules, settings, configuration) live until exit: out of the cycle
    # collector's sight, the interpreter's last collection no longer walks them, and the role
    # exits in a tenth of the time (0.2 s to 0.03 s for the client, measured; more on a busy host).
    gc.freeze()
    return stop


@contextmanager
def database_for(settings: Settings, role: str) -> Iterator[str]:
    database = open_database(settings)
    try:
        engine = make_engine(database.url, role, pool_size=1)
        try:
            ensure_current(engine)
        finally:
            engine.dispose()
        yield database.url
    finally:
        database.close()


DEBOUNCE_S = 0.005


class Wakeup:
    """LISTEN for state changes; wait() returns early on a notification, else after a jittered
    poll interval. Notifications are hints only: callers always re-check the database."""

    def __init__(self, database_url: str, role: str, poll_s: float) -> None:
        self._url = libpq_url(database_url)
        self._role = role
        self._poll_s = poll_s
        self._random = random.Random()
        self._conn: psycopg.Connection[tuple[object, ...]] | None = None

    def _connect(self) -> psycopg.Connection[tuple[object, ...]]:
        args = {k: v for k, v in connect_args(self._role).items() if k != "application_name"}
        conn = psycopg.connect(self._url, autocommit=True, application_name=f"corral-{self._role}-listen", **args)
        conn.execute("LISTEN corral_index")
        return conn

    def wait(self, timeout: float | None = None) -> None:
        limit = timeout if timeout is not None else self._poll_s * (0.5 + self._random.random())
        try:
            if self._conn is None or self._conn.closed:
                self._conn = self._connect()
            woke = False
            for _ in self._conn.notifies(timeout=limit, stop_after=1):
                woke = True
            if woke:
                # Debounce: a burst of commits (say, 500 node-update evaluations) is one wake-up.
                for _ in self._conn.notifies(timeout=DEBOUNCE_S):
                    pass
        except psycopg.Error as err:
            # Without the listener we still poll: sleep the interval and reconnect next time.
            log.warning("listener lost; polling until it reconnects", error=str(err).splitlines()[0])
            self.close()
            time.sleep(limit)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
