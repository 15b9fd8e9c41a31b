"""What every long-running role shares: database, schema check, signals, and wake-ups."""

from __future__ import annotations

import random
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
import structlog

from app.config import Settings
from app.db import connect_args, libpq_url, make_engine
from app.store.database import open_database
from app.store.schema import ensure_current

log = structlog.get_logger(__name__)


def stop_on_signals() -> threading.Event:
    """SIGTERM/SIGINT ask the role to finish what it is doing and exit."""
    stop = threading.Event()

    def _handler(signum: int, _frame: object) -> None:
        log.info("stopping", signal=signal.Signals(signum).name)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, _handler)
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


class Wakeup:
    """LISTEN for state changes; wait() returns early on a notification, else after a jittered
    poll interval. Notifications are hints only: callers always re-check the database."""

    def __init__(self, database_url: str, role: str, poll_s: float) -> None:
        args = {k: v for k, v in connect_args(role).items() if k != "application_name"}
        self._conn = psycopg.connect(
            libpq_url(database_url), autocommit=True, application_name=f"corral-{role}-listen", **args
        )
        self._conn.execute("LISTEN corral_index")
        self._poll_s = poll_s
        self._random = random.Random()

    def wait(self, timeout: float | None = None) -> None:
        limit = timeout if timeout is not None else self._poll_s * (0.5 + self._random.random())
        for _ in self._conn.notifies(timeout=limit, stop_after=1):
            pass

    def close(self) -> None:
        self._conn.close()
