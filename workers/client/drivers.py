"""Task drivers: `raw_exec` (a process group on the host) and `mock` (deterministic, in-process,
for tests and simulations). A handle's state() is saved to disk so a restarted client can
re-attach to what is still running."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import psutil

from app.jobspec.durations import DurationError, duration_ns

KILLED = -1  # exit code for a task that was killed (or vanished) without reporting one
# Runs the task, then records its exit code where a re-attached client can read it. The wrapper
# traps the kill signals (a handler, not an ignore: the task gets the default disposition) so it
# outlives the task and records how it ended; `{traps}` is filled in per task.
WRAPPER = 'f=$1; shift; trap : {traps}; "$@"; code=$?; echo "$code" > "$f"; exit "$code"'
DEFAULT_KILL_SIGNAL = "SIGINT"  # Nomad's, when the task sets no kill_signal
UNTRAPPABLE = frozenset({signal.SIGKILL, signal.SIGSTOP})


class StartError(Exception):
    """The driver could not start the task (Nomad's 'Driver Failure')."""


@dataclass(frozen=True)
class TaskSpec:
    name: str
    driver: str
    config: dict[str, Any]
    env: dict[str, str]  # the whole environment of the task (built by taskenv, never the client's)
    kill_timeout_s: float
    kill_signal: str = DEFAULT_KILL_SIGNAL


def signal_number(name: str) -> signal.Signals:
    """`SIGTERM` or `TERM` -> the signal; StartError for a name this system does not know."""
    wanted = name.upper() if name.upper().startswith("SIG") else f"SIG{name.upper()}"
    try:
        return signal.Signals[wanted]
    except KeyError:
        raise StartError(f"kill_signal {name!r} is not a signal this node knows") from None


class Handle(Protocol):
    def wait(self, timeout_s: float) -> int | None:
        """The exit code once the task has exited, else None after timeout_s."""

    def kill(self, timeout_s: float, signal_name: str = DEFAULT_KILL_SIGNAL) -> int:
        """Stop the task (signal_name, then by force after timeout_s); returns its exit code."""

    def state(self) -> dict[str, Any]: ...

    def pids(self) -> list[int]:
        """The processes the task's usage is measured from (none for a driver without any)."""

    def signal(self, signum: int) -> None:
        """Deliver signum to the task (Nomad's alloc signal)."""


class Driver(Protocol):
    name: str

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle: ...

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None: ...


def _seconds(value: Any, key: str) -> float:
    try:
        return duration_ns(value) / 1e9
    except DurationError as err:
        raise StartError(f"config.{key} {err}") from None


class RawExecHandle:
    def __init__(self, pid: int, created: float, exit_file: Path, process: subprocess.Popen[bytes] | None) -> None:
        self.pid, self.created, self.exit_file, self._process = pid, created, exit_file, process

    def state(self) -> dict[str, Any]:
        return {"pid": self.pid, "created": self.created, "exit_file": str(self.exit_file)}

    def _alive(self) -> bool:
        if self._process is not None:
            return self._process.poll() is None
        try:
            proc = psutil.Process(self.pid)
            # The pid may have been reused by an unrelated process since we saved it.
            return abs(proc.create_time() - self.created) < 0.5 and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def _exit_code(self) -> int:
        if self._process is not None and self._process.returncode is not None and self._process.returncode >= 0:
            return self._process.returncode
        with contextlib.suppress(OSError, ValueError):
            return int(self.exit_file.read_text().strip())
        return KILLED

    def wait(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        while self._alive():
            if time.monotonic() >= deadline:
                return None
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(max(0.0, min(0.5, deadline - time.monotonic())))
            else:
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        return self._exit_code()

    def kill(self, timeout_s: float, signal_name: str = DEFAULT_KILL_SIGNAL) -> int:
        """The kill signal to the whole process group, then SIGKILL to whatever is left of it once
        the task has exited or kill_timeout has passed: nothing it forked survives."""
        try:
            signum = signal_number(signal_name)
        except StartError:
            signum = signal.SIGINT  # as Nomad's SignalTask does with a name it does not know
        self._signal(signum)
        code = self.wait(timeout_s)
        self._signal(signal.SIGKILL)
        if code is None:
            code = self.wait(5.0)
        return KILLED if code is None else code

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def pids(self) -> list[int]:
        return [self.pid] if self._alive() else []

    def signal(self, signum: int) -> None:
        """To every process of the task but the wrapper: the wrapper traps only the kill
        signals, and any other (SIGUSR1's default is to terminate) would end it, and with it
        the record of the task's exit, while the task itself kept running."""
        try:
            processes = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return
        for process in processes:
            with contextlib.suppress(psutil.Error):
                process.send_signal(signum)


class RawExec:
    name = "raw_exec"

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle:
        command = task.config.get("command")
        if not isinstance(command, str) or not command:
            raise StartError("config.command is required")
        args = task.config.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
            raise StartError("config.args must be a list of strings")
        kill = signal_number(task.kill_signal)
        traps = " ".join(sorted({s.name[3:] for s in (signal.SIGINT, signal.SIGTERM, kill) if s not in UNTRAPPABLE}))
        exit_file = task_dir / "exit_code"
        exit_file.unlink(missing_ok=True)
        with (logs / f"{task.name}.stdout.0").open("ab") as out, (logs / f"{task.name}.stderr.0").open("ab") as err:
            try:
                process = subprocess.Popen(
                    ["/bin/sh", "-c", WRAPPER.format(traps=traps), "sh", str(exit_file), command, *map(str, args)],
                    cwd=task_dir,
                    env=dict(task.env),  # built from scratch: never the client's own environment
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,  # its own process group, killed whole; outlives a client crash
                )
            except (OSError, ValueError) as error:  # ValueError: a NUL byte in an argument or variable
                raise StartError(str(error)) from error
        created = psutil.Process(process.pid).create_time()
        return RawExecHandle(process.pid, created, exit_file, process)

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None:
        try:
            return RawExecHandle(int(saved["pid"]), float(saved["created"]), Path(saved["exit_file"]), None)
        except (KeyError, TypeError, ValueError):
            return None


class MockHandle:
    """Runs for `run_for` (forever if unset) and exits with `exit_code`; once killed it takes
    `kill_after` to exit. Times are wall-clock so a restarted client resumes the same schedule."""

    def __init__(self, started: float, run_for_s: float | None, exit_code: int, kill_after_s: float) -> None:
        self.started, self.run_for_s, self.exit_code, self.kill_after_s = started, run_for_s, exit_code, kill_after_s
        self._killed = threading.Event()
        self._killed_at = 0.0

    def state(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "run_for_s": self.run_for_s,
            "exit_code": self.exit_code,
            "kill_after_s": self.kill_after_s,
        }

    def _ends_at(self) -> float:
        natural = float("inf") if self.run_for_s is None else self.started + self.run_for_s
        return min(natural, self._killed_at + self.kill_after_s) if self._killed.is_set() else natural

    def wait(self, timeout_s: float) -> int | None:
        deadline = time.time() + timeout_s
        while True:
            now, ends = time.time(), self._ends_at()
            if now >= ends:
                return self._code(ends)
            if now >= deadline:
                return None
            pause = min(ends, deadline) - now
            if self._killed.is_set():
                time.sleep(pause)
            else:
                self._killed.wait(pause)  # a kill wakes it early: the end moves

    def _code(self, ended: float) -> int:
        natural = float("inf") if self.run_for_s is None else self.started + self.run_for_s
        return KILLED if ended < natural else self.exit_code

    def kill(self, timeout_s: float, signal_name: str = DEFAULT_KILL_SIGNAL) -> int:
        if not self._killed.is_set():
            self._killed_at = time.time()
            self._killed.set()
        code = self.wait(timeout_s)
        return KILLED if code is None else code

    def pids(self) -> list[int]:
        return []

    def signal(self, signum: int) -> None:
        """The mock task has no process: a signal reaches nothing, as it would a task ignoring it."""


class Mock:
    name = "mock"

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle:
        config = task.config
        if config.get("start_error"):
            raise StartError(str(config["start_error"]))
        run_for = _seconds(config["run_for"], "run_for") if "run_for" in config else None
        kill_after = _seconds(config.get("kill_after", 0), "kill_after")
        exit_code = config.get("exit_code", 0)
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            raise StartError("config.exit_code must be an integer")
        (logs / f"{task.name}.stdout.0").open("a").write(f"mock task {task.name} started\n")
        return MockHandle(time.time(), run_for, exit_code, kill_after)

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None:
        try:
            run_for = saved["run_for_s"]
            return MockHandle(
                float(saved["started"]),
                None if run_for is None else float(run_for),
                int(saved["exit_code"]),
                float(saved["kill_after_s"]),
            )
        except (KeyError, TypeError, ValueError):
            return None


def available(names: tuple[str, ...]) -> dict[str, Driver]:
    known: dict[str, Driver] = {"raw_exec": RawExec(), "mock": Mock()}
    return {name: known[name] for name in names}


def fingerprint(names: tuple[str, ...]) -> dict[str, Any]:
    """Node.Drivers: only the drivers this client has, so jobs needing others go elsewhere."""
    return {
        name: {"Detected": True, "Healthy": True, "HealthDescription": "Healthy", "Attributes": {}} for name in names
    }
