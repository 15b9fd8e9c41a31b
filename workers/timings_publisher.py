"""Publishes this role process's scheduler timers to the database every PUBLISH_EVERY_S (and
once more when it stops), so that the API servers' /v1/metrics reports them
(app/store/published_timings.py): the cumulative figures, and the go-metrics intervals completed
since the last publish. Publishes happen just after each interval's end (PUBLISH_DELAY_S into the
next), so the API finds an interval's figures within intervals.SETTLE_S of its end. A failed
publish is logged and retried at the next tick: metrics never stop a role."""

from __future__ import annotations

import os
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime

import structlog
from prometheus_client import REGISTRY
from sqlalchemy.exc import SQLAlchemyError

from app.db.engines import make_engine, make_sessionmaker, transaction
from app.metrics.aggregates import AGGREGATES
from app.metrics.intervals import INTERVAL_S
from app.metrics.timings import PUBLISHED
from app.store import published_timings as published

log = structlog.get_logger(__name__)
PUBLISH_EVERY_S = INTERVAL_S
PUBLISH_DELAY_S = 0.5  # into each interval: the previous one has ended and is complete


def until_next_publish(now: float) -> float:
    """Seconds from `now` to PUBLISH_DELAY_S past the next interval boundary."""
    return INTERVAL_S - (now - PUBLISH_DELAY_S) % INTERVAL_S


def process_key(role: str) -> str:
    return f"{role}:{socket.gethostname()}:{os.getpid()}:{int(time.time())}"


@contextmanager
def publishing(database_url: str, role: str, stop: threading.Event) -> Iterator[None]:
    """Publish in a daemon thread while the block runs; a last publish when it ends."""
    engine = make_engine(database_url, role, pool_size=1, max_overflow=0)
    sessions = make_sessionmaker(engine)
    key = process_key(role)
    done = threading.Event()
    sent = [float("-inf")]  # start of the newest interval published

    def once() -> None:
        intervals = [i for i in AGGREGATES.completed() if i.start > sent[0]]
        try:
            with transaction(sessions) as session:
                now = datetime.now(UTC)
                published.publish(session, key, published.snapshot(REGISTRY, PUBLISHED), now)
                published.publish_intervals(session, key, intervals, now)
        except SQLAlchemyError as err:
            log.warning("could not publish timers", error=str(err).splitlines()[0])
            return
        sent[0] = max((i.start for i in intervals), default=sent[0])

    def loop() -> None:
        while not (done.wait(until_next_publish(time.time())) or stop.is_set()):
            once()

    thread = threading.Thread(target=loop, name="timings-publisher", daemon=True)
    thread.start()
    try:
        yield
    finally:
        done.set()
        thread.join(timeout=2)
        once()
        engine.dispose()
