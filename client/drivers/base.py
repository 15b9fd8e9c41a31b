"""What every task driver shares: the task as a driver sees it, the handle and driver protocols,
the start error. A handle's state() is saved to disk so a restarted client can re-attach to
what is still running."""

from __future__ import annotations

import contextlib
import os
import signal
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol, runtime_checkable

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
class Limits:
    """What the scheduler reserved for the task, for drivers that enforce it (exec, docker)."""

    cpu_mhz: int = 0  # Resources.CPU: relative CPU shares
    memory_mb: int = 0  # Resources.MemoryMB: the soft limit (the hard one without memory_max)
    memory_max_mb: int = 0  # Resources.MemoryMaxMB: the hard limit when oversubscription allows it
    cores: tuple[int, ...] = ()  # the node's cores reserved for the task (Resources.Cores)


@dataclass(frozen=True)
class Mount:
    """A host path bound into the task (a host volume's volume_mount, or a docker `mount`)."""

    host_path: str
    task_path: str
    read_only: bool = False


@dataclass(frozen=True)
class PortMapping:
    """One port of the allocation's network: the host side the scheduler picked and the port
    the task listens on (`to`; 0 or -1 means the same as the host port)."""

    label: str
    host_ip: str
    host_port: int
    to: int = 0


@dataclass(frozen=True)
class LogConfig:
    """The task's `logs` block (Nomad's LogConfig and its defaults)."""

    max_files: int = 10
    max_file_size_mb: int = 10
    disabled: bool = False

    @classmethod
    def of(cls, raw: dict[str, Any] | None) -> LogConfig:
        raw = raw or {}
        return cls(
            max_files=max(1, int(raw.get("MaxFiles") or 10)),
            max_file_size_mb=max(1, int(raw.get("MaxFileSizeMB") or 10)),
            disabled=bool(raw.get("Disabled")),
        )


@dataclass(frozen=True)
class TaskSpec:
    name: str
    driver: str
    config: dict[str, Any]
    env: dict[str, str]  # the whole environment of the task (built by taskenv, never the client's)
    kill_timeout_s: float
    kill_signal: str = DEFAULT_KILL_SIGNAL
    user: str = ""  # Task.User; each driver applies its own default (exec: nobody)
    limits: Limits = Limits()
    mounts: tuple[Mount, ...] = ()
    ports: tuple[PortMapping, ...] = ()
    network_mode: str = "host"  # the group network's mode: host, bridge, none
    # The allocation's network namespace in bridge or none mode (client/network/bridge.py),
    # which exec and raw_exec tasks join by path and docker tasks through the allocation's
    # pause container (docker_pause.py); "" otherwise.
    netns: str = ""
    alloc_id: str = ""
    alloc_dir: Path | None = None  # the allocation's directory (alloc/, and one per task)
    shutdown_delay_s: float = 0.0  # Task.ShutdownDelay: waited between the stop and the kill signal
    # The logs block; None: no logmon runs, the driver appends to `<task>.stdout.0` itself.
    logs: LogConfig | None = None


def log_paths(task: TaskSpec, logs: Path) -> tuple[Path, Path]:
    """Where a driver writes the task's stdout and stderr. Every driver opens these (appending)
    and never names log files itself, so rotation is decided in one place: the FIFOs the task's
    logmon reads and rotates into `<task>.stdout.N` (client/logs/logmon.py), /dev/null when the logs
    block disables logging."""
    if task.logs is None:
        return logs / f"{task.name}.stdout.0", logs / f"{task.name}.stderr.0"
    if task.logs.disabled:
        return Path(os.devnull), Path(os.devnull)
    return logs / f".{task.name}.stdout.fifo", logs / f".{task.name}.stderr.fifo"


def open_log(path: Path) -> BinaryIO:
    """One of log_paths, opened for the task's output. A log FIFO is opened read-write, which
    on Linux never waits for a reader: the task starts while its logmon comes up (a Python
    interpreter: 100-260 ms at load), and what it writes meanwhile waits in the pipe for
    logmon. (Write-only, the open would block until logmon held the FIFO.) The task runner
    waits for logmon once the task has started and kills the task if logmon never comes up."""
    with contextlib.suppress(OSError):
        if stat.S_ISFIFO(path.stat().st_mode):
            return path.open("r+b", buffering=0)
    return path.open("ab")


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


@runtime_checkable
class ReportsOom(Protocol):
    """A handle whose driver can tell an OOM kill from any other end (exec, docker). Handles
    without it (raw_exec, mock) are never reported as OOM-killed."""

    def oom_killed(self) -> bool:
        """Whether the kernel's OOM killer ended the task; meaningful once wait() gave a code."""


def oom_killed(handle: Handle) -> bool:
    """Nomad's ExitResult.OOMKilled for any handle (False for drivers that cannot tell)."""
    if isinstance(handle, ReportsOom):
        return handle.oom_killed()
    return exit_detail(handle).oom_killed


@dataclass(frozen=True)
class ExitDetail:
    """What a driver knows about an exit beyond its code (Nomad's ExitResult.OOMKilled and Err)."""

    oom_killed: bool = False
    message: str = ""  # e.g. "OOM Killed": the task event's exit message


@runtime_checkable
class ExplainsExit(Protocol):
    """A handle that can say why its task exited (optional: raw_exec and mock do not)."""

    def exit_detail(self) -> ExitDetail: ...


def exit_detail(handle: Handle) -> ExitDetail:
    return handle.exit_detail() if isinstance(handle, ExplainsExit) else ExitDetail()


class Driver(Protocol):
    name: str

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle: ...

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None: ...


def seconds(value: Any, key: str) -> float:
    try:
        return duration_ns(value) / 1e9
    except DurationError as err:
        raise StartError(f"config.{key} {err}") from None
