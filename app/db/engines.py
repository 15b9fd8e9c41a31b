"""Engines and sessions: every connection names its role and carries the role's timeouts."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypedDict
from urllib.parse import parse_qs, quote, urlsplit

import psycopg
from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import make_url
from sqlalchemy.engine.interfaces import DBAPIConnection
from sqlalchemy.exc import InvalidatePoolError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import ConnectionPoolEntry, PoolProxiedConnection


@dataclass(frozen=True)
class Timeouts:
    """Server-side limits in milliseconds; 0 disables one."""

    statement_ms: int
    lock_ms: int
    idle_in_transaction_ms: int


# A hung or frozen process must never pin a row lock or the xmin horizon for long
# (reliability reference F2): idle_in_transaction is always bounded.
ROLE_TIMEOUTS: dict[str, Timeouts] = {
    "api": Timeouts(statement_ms=5_000, lock_ms=2_000, idle_in_transaction_ms=10_000),
    "worker": Timeouts(statement_ms=30_000, lock_ms=5_000, idle_in_transaction_ms=30_000),
    "applier": Timeouts(statement_ms=30_000, lock_ms=5_000, idle_in_transaction_ms=30_000),
    "leader": Timeouts(statement_ms=60_000, lock_ms=5_000, idle_in_transaction_ms=60_000),
    "migrate": Timeouts(statement_ms=0, lock_ms=10_000, idle_in_transaction_ms=60_000),
    "cli": Timeouts(statement_ms=30_000, lock_ms=5_000, idle_in_transaction_ms=30_000),
    "test": Timeouts(statement_ms=60_000, lock_ms=10_000, idle_in_transaction_ms=60_000),
}


def sqlalchemy_url(url: str) -> str:
    """Accept libpq-style URLs and point SQLAlchemy at psycopg 3.

    A libpq URL may name several hosts (`postgresql://u@h1:5432,h2:5433/corral?target_session_attrs=read-write`,
    a replicated cluster): SQLAlchemy's URL parser cannot read that netloc, so the hosts move to
    its own multi-host form (`?host=h1:5432&host=h2:5433`), which the psycopg dialect hands back
    to libpq as `host=h1,h2 port=5432,5433`. Every other query parameter (target_session_attrs,
    sslmode, ...) is kept as given."""
    parsed = make_url(_hosts_to_query(url))
    if parsed.drivername in ("postgresql", "postgres"):
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed.render_as_string(hide_password=False)


def libpq_url(url: str) -> str:
    """The same URL without the SQLAlchemy driver suffix, for psycopg and psql; several hosts
    are written back the way libpq reads them (`h1:5432,h2:5433` in the netloc)."""
    parsed = make_url(_hosts_to_query(url)).set(drivername="postgresql")
    hosts = parsed.query.get("host")
    if not isinstance(hosts, tuple):
        return parsed.render_as_string(hide_password=False)
    query = {key: value for key, value in parsed.query.items() if key != "host"}
    bare = parsed.set(host=None, port=None, query=query).render_as_string(hide_password=False)
    scheme, rest = bare.split("://", 1)
    userinfo, at, tail = rest.rpartition("@") if rest.split("/", 1)[0].endswith("@") else ("", "", rest)
    return f"{scheme}://{userinfo}{at}{','.join(hosts)}{tail}"


def url_hosts(url: str) -> list[str]:
    """The `host[:port]` entries a URL names, in the order libpq tries them."""
    parsed = make_url(_hosts_to_query(url))
    hosts = parsed.query.get("host")
    if isinstance(hosts, tuple):
        return list(hosts)
    host = hosts if isinstance(hosts, str) else (parsed.host or "")
    return [f"{host}:{parsed.port}" if parsed.port else host]


def _hosts_to_query(url: str) -> str:
    """Rewrite a netloc naming several hosts into SQLAlchemy's `?host=h:p&host=h:p` form;
    any other URL is returned unchanged."""
    parts = urlsplit(url)
    userinfo, at, hostlist = parts.netloc.rpartition("@")
    if "," not in hostlist:
        return url
    if "host" in parse_qs(parts.query):
        raise ValueError(f"database URL names hosts both before the path and in ?host=: {url}")
    hosts = [host for host in hostlist.split(",") if host]
    query = "&".join([*(f"host={quote(host, safe=':[]')}" for host in hosts), *([parts.query] if parts.query else [])])
    # Written by hand: urlunsplit drops the `//` of an empty netloc.
    fragment = f"#{parts.fragment}" if parts.fragment else ""
    return f"{parts.scheme}://{userinfo}{at}{parts.path}?{query}{fragment}"


class LibpqParams(TypedDict):
    """The libpq connection parameters every role sets (psycopg.connect's keyword arguments)."""

    application_name: str
    options: str
    connect_timeout: int
    keepalives: int
    keepalives_idle: int
    keepalives_interval: int
    keepalives_count: int
    tcp_user_timeout: int


def connect_args(role: str, application_name: str = "") -> LibpqParams:
    """libpq parameters: application_name (`corral-<role>` unless named), timeouts, and
    keepalives that detect a dead peer."""
    limits = ROLE_TIMEOUTS[role]
    options = " ".join(
        [
            f"-c statement_timeout={limits.statement_ms}",
            f"-c lock_timeout={limits.lock_ms}",
            f"-c idle_in_transaction_session_timeout={limits.idle_in_transaction_ms}",
            "-c TimeZone=UTC",
        ]
    )
    return {
        "application_name": application_name or f"corral-{role}",
        "options": options,
        "connect_timeout": 5,
        "keepalives": 1,
        "keepalives_idle": 5,
        "keepalives_interval": 2,
        "keepalives_count": 3,
        "tcp_user_timeout": 10_000,
    }


def make_engine(
    url: str,
    role: str,
    *,
    pool_size: int = 5,
    pre_ping: bool = True,
    max_overflow: int | None = None,
    pool_timeout_s: float = 30.0,
    ping_after_idle_s: float | None = None,
) -> Engine:
    """pre_ping costs a round trip per checkout; hot loops turn it off and survive a dead
    connection by retrying (SQLAlchemy discards connections that failed with a disconnect).
    `ping_after_idle_s` replaces it with a ping of connections that sat in the pool at least
    that long (see ping_after_idle). `max_overflow` defaults to the pool size; 0 makes callers
    queue for a pooled connection."""
    engine = create_engine(
        sqlalchemy_url(url),
        connect_args=connect_args(role),
        pool_size=pool_size,
        max_overflow=pool_size if max_overflow is None else max_overflow,
        pool_timeout=pool_timeout_s,
        pool_pre_ping=pre_ping and ping_after_idle_s is None,
        pool_recycle=1800,
    )
    if ping_after_idle_s is not None:
        ping_after_idle(engine, ping_after_idle_s)
    return engine


IDLE_SINCE = "corral_idle_since"  # in each pooled connection's info: when it went back to the pool


def ping_after_idle(engine: Engine, idle_s: float) -> None:
    """Ping a connection at checkout only when it sat in the pool for `idle_s` or more: a dead
    one is replaced before use, as pre_ping does, and the pool's older connections with it.
    A busy pool hands out connections used a moment ago, which pre_ping would ping every time
    (a round trip and the API's CPU per request); one that died since is found by the request
    using it, which answers 503 (app.api.http.errors), and the pool is then renewed, as a
    psycopg pool that does not check on checkout would."""

    @event.listens_for(engine.pool, "checkin")
    def _checked_in(dbapi_connection: DBAPIConnection | None, record: ConnectionPoolEntry) -> None:
        record.info[IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine.pool, "checkout")
    def _checked_out(
        dbapi_connection: DBAPIConnection, record: ConnectionPoolEntry, proxy: PoolProxiedConnection
    ) -> None:
        since = record.info.get(IDLE_SINCE)
        if since is None or time.monotonic() - since < idle_s:
            return  # fresh (just connected), or used a moment ago
        try:
            engine.dialect.do_ping(dbapi_connection)
        except (psycopg.OperationalError, psycopg.InterfaceError) as err:  # gone, not refused
            raise InvalidatePoolError(str(err).strip()) from err  # reconnects, as pre_ping does


def make_sessionmaker(engine: Engine) -> sessionmaker[Session]:
    return sessionmaker(bind=engine, expire_on_commit=False)


@contextmanager
def transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """One unit of work: commit on success, roll back on any exception."""
    with factory() as session, session.begin():
        yield session


@contextmanager
def autocommitted(engine: Engine) -> Iterator[psycopg.Connection[Any]]:
    """A pooled connection's raw psycopg connection in autocommit mode, for the hot paths that
    send their own BEGIN/COMMIT in a pipeline or their statements as single implicit
    transactions. Whatever fails, an open transaction is rolled back before the connection goes
    back to the pool, in the mode SQLAlchemy expects."""
    with engine.connect() as conn:
        pg = conn.connection.driver_connection
        assert pg is not None
        pg.autocommit = True
        try:
            yield pg
        finally:
            try:
                if not pg.closed and pg.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                    pg.execute("ROLLBACK")
            finally:
                if not pg.closed:  # a dead connection is discarded by the pool's reset
                    pg.autocommit = False
