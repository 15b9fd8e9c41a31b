"""Per-application state (engines, session factories, the index watcher) and responses."""

from __future__ import annotations

import contextlib
import functools
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ParamSpec, TypeVar

import psycopg
from flask import Response, current_app, g, has_request_context, jsonify, request
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from app.api.http.blocking import IndexWatcher, blocking_read
from app.api.http.client_turns import ClientTurns
from app.api.http.errors import CommitOutcomeUnknown, ReplicationUnconfirmed, database_unavailable
from app.api.http.hangups import HangupMonitor
from app.api.http.params import blocking_params
from app.api.http.replicas import PRIMARY, Source, Standby, StandbyUnusable, may_use_standby, remaining, standby_read
from app.settings.config import Settings
from app.store.node.heartbeat_ttl import FleetSize

T = TypeVar("T")
P = ParamSpec("P")


@dataclass(frozen=True)
class Lane:
    """Session factories over one connection pool."""

    writes: sessionmaker[Session]
    reads: sessionmaker[Session]


@dataclass
class ApiState:
    settings: Settings
    database_url: str
    engine: Engine
    ordinary: Lane
    # Heartbeats, allocation updates, node registration and health: a pool of their own, so a
    # flood of reads or writes queued on the ordinary pool never makes a healthy node miss its TTL.
    client: Lane
    watcher: IndexWatcher
    client_engine: Engine
    # Hot standbys for reads (CORRAL_READ_DATABASE_URL); None: the primary answers every read.
    standby: Standby | None = None
    # Notices callers that hang up while their request waits (app.api.http.hangups).
    hangups: HangupMonitor = field(default_factory=HangupMonitor)
    # The servers' link secret (app/acl/link_secret.py): each node's link key derives from it.
    link_secret: bytes = b""
    # The keyring's root key (app/keyring/root_key.py): it opens the data keys the database holds.
    root_key: bytes = b""
    # Client writes that take the state index (registrations, allocation updates) hold a
    # pooled connection through row locks and a synchronous commit, and the reads of the
    # client lane's blocking queries (every node's allocation watch) come in bursts: hundreds
    # woken by one change. Together they hold at most `client_turns` connections at once (half
    # the client pool unless http_client_turns says), waiting their turn without a connection
    # (app/api/http/client_turns.py), so a burst of them never leaves a heartbeat or the health
    # check without one; a write that finds too long a line is answered 503 at once.
    client_share: ClientTurns = field(init=False)
    # The fleet's size as this process last counted it, which sizes heartbeat TTLs.
    fleet_size: FleetSize = field(default_factory=FleetSize)

    def __post_init__(self) -> None:
        self.client_share = ClientTurns(self.settings.client_turns, self.settings.http_client_write_queue)

    def close(self) -> None:
        """Stop the index watcher and close every pooled connection (tests, app teardown)."""
        self.watcher.stop()
        self.hangups.stop()
        if self.standby is not None:
            self.standby.close()
        self.engine.dispose()
        self.client_engine.dispose()

    @property
    def lane(self) -> Lane:
        on_client_lane = has_request_context() and g.get("corral_client_lane", False)
        return self.client if on_client_lane else self.ordinary

    @property
    def writes(self) -> sessionmaker[Session]:
        return self.lane.writes

    @property
    def reads(self) -> sessionmaker[Session]:
        return self.lane.reads


def client_lane(view: Callable[P, T]) -> Callable[P, T]:
    """Serve this route from the pool reserved for client traffic."""

    @functools.wraps(view)
    def wrapped(*args: P.args, **kwargs: P.kwargs) -> T:
        g.corral_client_lane = True
        return view(*args, **kwargs)

    return wrapped


def state() -> ApiState:
    found: ApiState = current_app.extensions["corral"]
    return found


def respond(body: Any, index: int, status: int = 200) -> Response:
    response = jsonify(body)
    response.status_code = status
    response.headers["X-Nomad-Index"] = str(index)
    source: Source = g.get("corral_read_source", PRIMARY) if has_request_context() else PRIMARY
    response.headers["X-Nomad-KnownLeader"] = "true" if source.known_leader else "false"
    response.headers["X-Nomad-LastContact"] = str(source.last_contact_ms)
    return response


def read(
    tables: list[str], fn: Callable[[Session], T], node: uuid.UUID | None = None, servers_only: bool = False
) -> tuple[T, int]:
    """A blocking-capable read: honours ?index= and ?wait= on every read endpoint. With `node`
    (a node's own allocations), only that node's changes end the wait; with `servers_only`
    too, only the servers' (not the statuses its client reported: app.api.http.blocking)."""
    current = state()
    params = blocking_params(current.settings.max_blocking_wait_s)
    caller = current.hangups.caller(request.environ.get("gunicorn.socket"))
    standby = current.standby
    if may_use_standby(params) and standby is not None:  # checks ?stale even without a standby
        started = time.monotonic()
        reads = standby.client if current.lane is current.client else standby.ordinary
        try:
            found = standby_read(standby, reads, tables, params, fn, caller, node, servers_only)
            result, index, g.corral_read_source = found
            return result, index
        except StandbyUnusable:
            params = remaining(params, started)
    turn = current.client_share if current.lane is current.client else contextlib.nullcontext()
    return blocking_read(current.reads, current.watcher, tables, params, fn, caller, node, turn, servers_only)


def write(fn: Callable[[Session], T]) -> T:
    """One write transaction: everything in fn commits together or not at all. A connection
    lost during COMMIT leaves the outcome unknown, and the answer says so."""
    with state().writes() as session:
        session.begin()
        try:
            result = fn(session)
            session.flush()  # every statement now: only COMMIT itself is left for the outcome check
        except BaseException:
            with contextlib.suppress(Exception):  # the connection may be gone: the error that matters is fn's
                session.rollback()
            raise
        _commit(session)
        return result


# PostgreSQL's WARNING when a cancel (pg_cancel_backend, a terminated backend; statement_timeout
# is stopped before the commit) ends COMMIT's wait for the synchronous standby: the transaction
# stays committed locally and COMMIT still "succeeds".
SYNC_WAIT_CANCELLED = "canceling wait for synchronous replication"


def _commit(session: Session) -> None:
    """COMMIT, telling a lost connection and an unconfirmed replication (both 503s) from success."""
    driver = session.connection().connection.dbapi_connection
    warnings: list[str] = []

    def collect(notice: psycopg.errors.Diagnostic) -> None:
        warnings.append(notice.message_primary or "")

    if isinstance(driver, psycopg.Connection):
        driver.add_notice_handler(collect)
    try:
        session.commit()
    except DBAPIError as err:
        if database_unavailable(err):
            raise CommitOutcomeUnknown(str(err.orig or err).strip().splitlines()[0]) from err
        raise
    finally:
        if isinstance(driver, psycopg.Connection):
            driver.remove_notice_handler(collect)
    cancelled = [message for message in warnings if SYNC_WAIT_CANCELLED in message]
    if cancelled:
        raise ReplicationUnconfirmed(cancelled[0])


def client_write(fn: Callable[[Session], T]) -> T:
    """A client lane write that takes the state index: waits its turn (without a connection)
    behind the other such writes, so heartbeats always find a pooled connection."""
    with state().client_share.write():
        return write(fn)
