"""Reads from hot standbys (CORRAL_READ_DATABASE_URL): which reads a standby may answer, and
how an answer from one never goes back in time for the client.

A client tells what it has already seen only through `?index=` (a blocking query): that is the
minimum. A standby answers a read that names an index, or that passes Nomad's `?stale`, and only
from a snapshot whose safe index is at or above the minimum (on a hot standby,
`pg_current_snapshot()` is built from the replayed WAL, so the safe index is computed exactly as
on the primary: docs/postgres-ha.md, "Reads from standbys"). A standby behind the minimum gets
CORRAL_READ_REPLAY_WAIT_S to replay past it; then, or when the standby cannot be reached or
cancels the read (a replay conflict), the primary answers. A read with neither parameter may
follow the client's own write, whose index it does not know: the primary answers it, as
Nomad's leader answers reads that are not `?stale`."""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TypeVar

import structlog
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from app.api.http.blocking import IndexWatcher, blocking_read
from app.api.http.hangups import Caller, Wakeable
from app.api.http.params import BlockingParams, arg
from app.store.sql import query
from app.values.errors import InvalidInput

T = TypeVar("T")
log = structlog.get_logger(__name__)

REPLAY_CHECK_S = 0.01  # how often a read waiting for the standby to catch up looks again


@dataclass(frozen=True)
class Source:
    """Who answered a read, for Nomad's X-Nomad-KnownLeader and X-Nomad-LastContact headers."""

    known_leader: bool = True
    last_contact_ms: int = 0


PRIMARY = Source()


class StandbyUnusable(Exception):
    """The standby cannot answer this read (behind the client, unreachable, or it cancelled the
    read): the primary answers instead."""


@dataclass
class Standby:
    """Read-only session factories on the standby, one per lane (as on the primary, the client
    lane has a pool of its own), and an index watcher that polls the standby and listens on the
    primary."""

    ordinary: sessionmaker[Session]
    client: sessionmaker[Session]
    watcher: IndexWatcher
    replay_wait_s: float
    engines: tuple[Engine, ...]

    def close(self) -> None:
        self.watcher.stop()
        for engine in self.engines:
            engine.dispose()


def stale_requested() -> bool:
    """Nomad's `?stale` (present, empty or a boolean): any server may answer."""
    raw = arg("stale")
    if raw is None:
        return False
    lowered = raw.strip().lower()
    if lowered in ("", "true", "1", "t"):
        return True
    if lowered in ("false", "0", "f"):
        return False
    raise InvalidInput.of("stale", f"must be true or false, got {raw!r}")


def may_use_standby(params: BlockingParams) -> bool:
    """A standby may answer when the client said what it has seen, or accepted staleness.
    Always parses ?stale, so a bad value is a 400 with or without a standby."""
    stale = stale_requested()
    return params.index is not None or stale


def standby_read(
    standby: Standby,
    reads: sessionmaker[Session],
    tables: list[str],
    params: BlockingParams,
    fn: Callable[[Session], T],
    gone: Caller,
    node: uuid.UUID | None,
    servers_only: bool = False,
) -> tuple[T, int, Source]:
    """blocking_read on the standby, from a snapshot at or past the client's index only.
    Raises StandbyUnusable (with nothing sent) when the primary must answer."""
    minimum = params.index or 0
    # While the standby lags (app.api.http.blocking.IndexWatcher.lagging), a change on the primary
    # may never wake this wait in time: stop waiting and ask the primary.
    caller = LaggingCaller(gone, standby.watcher)

    def checked(session: Session) -> tuple[T, Source]:
        status = session.execute(query("standby_read_status")).one()
        if int(status.safe) < minimum:
            # Another standby of a multi-host URL, or one rebuilt from an older backup.
            raise StandbyUnusable(f"standby snapshot at {status.safe}, client has {minimum}")
        if caller.lagged:
            raise StandbyUnusable("standby lagging while the query waited")
        return fn(session), Source(bool(status.known_leader), int(status.lag_ms))

    try:
        _await_replay(standby, reads, minimum, gone)
        (result, source), index = blocking_read(
            reads, standby.watcher, tables, params, checked, caller, node, servers_only=servers_only
        )
    except DBAPIError as err:
        log.info("standby read failed; the primary answers", error=str(err.orig or err).strip().splitlines()[0])
        raise StandbyUnusable(str(err)) from err
    return result, index, source


def _await_replay(standby: Standby, reads: sessionmaker[Session], minimum: int, gone: Caller) -> None:
    """Return once the standby's safe index reaches `minimum`; StandbyUnusable after
    replay_wait_s. The watcher's last look answers the common case without a query."""
    if standby.watcher.safe_index() >= minimum:
        return
    deadline = time.monotonic() + standby.replay_wait_s
    while True:
        with reads() as session, session.begin():
            if int(session.execute(query("safe_index")).scalar_one()) >= minimum:
                return
        if time.monotonic() >= deadline or gone():
            raise StandbyUnusable(f"standby did not replay to index {minimum} within {standby.replay_wait_s}s")
        time.sleep(REPLAY_CHECK_S)


class LaggingCaller(Caller):
    """The caller, and also gone once the standby lags: the standby's watcher wakes every
    waiter when it starts lagging, and they go and ask the primary."""

    def __init__(self, inner: Caller, watcher: IndexWatcher) -> None:
        self._inner = inner
        self._watcher = watcher
        self.lagged = False

    def gone(self) -> bool:
        self.lagged = self.lagged or self._watcher.lagging
        return self.lagged or self._inner.gone()

    def waking(self, event: Wakeable) -> contextlib.AbstractContextManager[None]:
        return self._inner.waking(event)


def remaining(params: BlockingParams, started: float) -> BlockingParams:
    """The same request with the wait already spent on the standby taken off."""
    return replace(params, wait_s=max(0.0, params.wait_s - (time.monotonic() - started)))
