"""Singleton roles (applier, leader): a session advisory lock on a dedicated connection plus a
term row renewed every second. A lock alone cannot detect a frozen holder, so a standby that
sees the term go stale terminates the holder's backend (releasing its lock) and takes over."""

from __future__ import annotations

import os
import socket
import zlib
from datetime import timedelta

import structlog
from sqlalchemy import Connection, Engine, text

log = structlog.get_logger(__name__)
STALE_AFTER = timedelta(seconds=10)

ACQUIRE = text(
    """
    INSERT INTO leader_terms AS t (role, term, holder, holder_backend_pid, acquired_at, renewed_at)
    VALUES (:role, 1, :holder, pg_backend_pid(), now(), now())
    ON CONFLICT (role) DO UPDATE SET term = t.term + 1, holder = excluded.holder,
        holder_backend_pid = excluded.holder_backend_pid, acquired_at = now(), renewed_at = now()
    RETURNING term
    """
)
# The session that holds the role's advisory lock now, if the term stopped renewing. Found in
# pg_locks rather than from leader_terms.holder_backend_pid: after a failover that pid names a
# backend of the dead server, and on the new primary it may be an unrelated session.
# pg_try_advisory_lock(bigint) shows the key's high 32 bits as classid and its low ones as objid.
STALE_HOLDER = text(
    """
    SELECT l.pid
    FROM leader_terms t
    JOIN pg_locks l ON l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
        AND l.classid = CAST(:key_high AS oid) AND l.objid = CAST(:key_low AS oid)
        AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
    WHERE t.role = :role AND t.renewed_at < now() - make_interval(secs => :stale_s)
    """
)


def lock_key(role: str) -> int:
    return zlib.crc32(f"corral:{role}".encode())


def holder_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


class Leadership:
    """Holds (or waits for) one role. All of the holder's writes go through `connection`."""

    def __init__(self, engine: Engine, role: str) -> None:
        self.role = role
        self.engine = engine
        self.connection: Connection = engine.connect()
        self.term: int | None = None

    def try_acquire(self) -> bool:
        got = self.connection.execute(text("SELECT pg_try_advisory_lock(:k)"), {"k": lock_key(self.role)}).scalar()
        if not got:
            self.connection.commit()
            self._evict_stale_holder()
            return False
        self.term = int(self.connection.execute(ACQUIRE, {"role": self.role, "holder": holder_name()}).scalar_one())
        self.connection.commit()
        log.info("acquired role", role=self.role, term=self.term)
        return True

    def _evict_stale_holder(self) -> None:
        """A holder that stopped renewing (frozen, partitioned) keeps its lock forever: end its session."""
        with self.engine.connect() as conn:
            key = lock_key(self.role)
            params = {
                "role": self.role,
                "stale_s": STALE_AFTER.total_seconds(),
                "key_high": key >> 32,
                "key_low": key & 0xFFFFFFFF,
            }
            pid = conn.execute(STALE_HOLDER, params).scalar()
            if pid is not None:
                log.warning("terminating stale holder", role=self.role, backend_pid=pid)
                conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
                conn.commit()

    def renew(self, conn: Connection) -> bool:
        """Renew from any connection; False means the term moved on (we were deposed)."""
        row = conn.execute(
            text("UPDATE leader_terms SET renewed_at = now() WHERE role = :role AND term = :term RETURNING term"),
            {"role": self.role, "term": self.term},
        ).first()
        conn.commit()
        return row is not None

    def close(self) -> None:
        try:
            self.connection.close()
        finally:
            self.term = None
