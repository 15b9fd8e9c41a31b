"""`corral agent -dev`: embedded Postgres, migrations, and every role as a child process,
their logs merged into one stream with a role prefix. Ctrl-C stops all of it."""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import IO

import structlog

from app.config import Settings
from app.db.database import open_database
from app.db.schema import upgrade

log = structlog.get_logger(__name__)
STOP_TIMEOUT_S = 15.0
PR_SET_PDEATHSIG = 1


@dataclass
class Child:
    role: str
    process: subprocess.Popen[bytes]
    pump: threading.Thread = field(init=False)


def _die_with_parent() -> None:
    """Children get SIGTERM if the agent dies, even by kill -9, so none outlive it."""
    libc = ctypes.CDLL("libc.so.6", use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)


def _pump(role: str, stream: IO[bytes], out: IO[str], lock: threading.Lock) -> None:
    prefix = f"{role:>7} | "
    for raw in iter(stream.readline, b""):
        with lock:
            out.write(prefix + raw.decode(errors="replace"))
            out.flush()


def _spawn(role: str, args: list[str], env: dict[str, str], lock: threading.Lock) -> Child:
    process = subprocess.Popen(
        [sys.executable, "-m", "app.cli", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        preexec_fn=_die_with_parent,
        start_new_session=True,  # Ctrl-C reaches the agent only; it stops children in order
    )
    child = Child(role, process)
    assert process.stdout is not None
    child.pump = threading.Thread(target=_pump, args=(role, process.stdout, sys.stderr, lock), daemon=True)
    child.pump.start()
    return child


ROLES: list[tuple[str, list[str]]] = [
    ("server", ["server"]),
    ("worker1", ["worker"]),
    ("worker2", ["worker"]),
    ("applier", ["applier"]),
    ("leader", ["leader"]),
]


def dev_client_args(settings: Settings) -> list[str]:
    """One client with both drivers, so a quick-start job is placed, runs and completes."""
    return [
        "client",
        "--server",
        f"http://{settings.bind}",
        "--data-dir",
        str(settings.data_dir / "client"),
        "--driver",
        "raw_exec",
        "--driver",
        "mock",
    ]


def run_dev_agent(settings: Settings) -> int:
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    database = open_database(settings)
    children: list[Child] = []
    try:
        upgrade(database.url)
        env = {**os.environ, "CORRAL_DATABASE_URL": database.url, "PYTHONUNBUFFERED": "1"}
        lock = threading.Lock()
        roles = [*ROLES, ("client", dev_client_args(settings))]
        children = [_spawn(role, args, env, lock) for role, args in roles]
        log.info("dev agent running", api=f"http://{settings.bind}", roles=[c.role for c in children])
        return _supervise(children, stop)
    finally:
        _stop_children(children)
        database.close()


def _supervise(children: list[Child], stop: threading.Event) -> int:
    while not stop.wait(0.5):
        for child in children:
            code = child.process.poll()
            if code is not None:
                log.error("role exited; stopping the agent", role=child.role, exit_code=code)
                return 1
    log.info("stopping")
    return 0


def _stop_children(children: list[Child]) -> None:
    for child in children:
        if child.process.poll() is None:
            child.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + STOP_TIMEOUT_S
    for child in children:
        try:
            child.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            log.warning("role did not stop in time; killing it", role=child.role)
            child.process.kill()
            child.process.wait()
        child.pump.join(timeout=2)
