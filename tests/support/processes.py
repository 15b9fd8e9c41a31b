"""Real corral processes: started through the console script, always cleaned up."""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Protocol

import httpx
import psutil
import pytest

CORRAL = str(Path(sys.executable).parent / "corral")
READY_DEADLINE_S = 120.0


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Corral:
    """One `corral ...` process with its output captured to a file."""

    def __init__(self, args: list[str], cwd: Path, env: dict[str, str], executable: str = CORRAL) -> None:
        # The arguments name the log; a path among them (a flag's value) must not make it a path.
        named = "-".join(args).replace("/", "_")[:120]
        self.log_path = cwd / f"corral-{named}-{time.monotonic_ns()}.log"
        self._log: IO[bytes] = self.log_path.open("wb")
        self.process = subprocess.Popen(
            [executable, *args], cwd=cwd, env=env, stdout=self._log, stderr=subprocess.STDOUT
        )

    @property
    def output(self) -> str:
        return self.log_path.read_text(errors="replace")

    def descendants(self) -> list[psutil.Process]:
        try:
            return psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return []

    def wait(self, timeout: float = 60) -> int:
        return self.process.wait(timeout)

    def kill_all(self) -> None:
        for proc in self.descendants():
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.kill()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait()
        self._log.close()


class CorralFactory(Protocol):
    """What the `corral` fixtures hand a test: starts `corral ARGS` with only ENV's CORRAL_*
    variables (over the test process's other variables), in CWD (default: the test's work
    directory), and kills it when the test ends."""

    def __call__(
        self, args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None, executable: str = CORRAL
    ) -> Corral: ...


def wait_healthy(base_url: str, process: Corral) -> float:
    """Seconds until /v1/agent/health answered ok; fails if the process exits first."""
    began = time.monotonic()
    while time.monotonic() - began < READY_DEADLINE_S:
        if process.process.poll() is not None:
            pytest.fail(f"corral exited with {process.process.returncode} before becoming healthy:\n{process.output}")
        try:
            if httpx.get(f"{base_url}/v1/agent/health", timeout=2).status_code == 200:
                return time.monotonic() - began
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    pytest.fail(f"corral did not become healthy:\n{process.output}")


def postgres_running_in(data_dir: Path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = proc.info.get("cmdline") or []
        if any(str(data_dir) in part for part in cmdline) and any("postgres" in part for part in cmdline):
            found.append(proc)
    return found


def wait_for(condition: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Poll until condition() holds; False at the deadline (the caller asserts)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)
    return condition()
