"""The client's side of logmon (client/logmon.py): start a task's logmon before its driver
opens the log FIFOs, find it again after a client restart, stop it once the task is done."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import time
from pathlib import Path

import psutil

from client import logmon
from client.drivers import LogConfig, StartError

READY_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 5.0
SCRIPT = str(Path(logmon.__file__).resolve())


def running(logs: Path, task: str) -> psutil.Process | None:
    """The task's logmon, by its pid file, if that pid is still a logmon of this task."""
    try:
        pid = int(logmon.pid_path(logs, task).read_text().strip())
        process = psutil.Process(pid)
        command = process.cmdline()
    except (OSError, ValueError, psutil.Error):
        return None
    if SCRIPT in command and str(logs) in command and task in command and process.status() != psutil.STATUS_ZOMBIE:
        return process
    return None


def ensure(logs: Path, task: str, config: LogConfig) -> None:
    """A logmon reading the task's FIFOs, started unless one already runs; returns once it
    holds them open (a driver opening them then never blocks). StartError when it does not come up."""
    if config.disabled or running(logs, task) is not None:
        return
    logmon.pid_path(logs, task).unlink(missing_ok=True)
    command = [sys.executable, "-I", "-S", SCRIPT, str(logs), task, str(config.max_files), str(config.max_file_size_mb)]
    process = subprocess.Popen(
        command,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # outlives the client, as the task does
        close_fds=True,
    )
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not logmon.pid_path(logs, task).exists():
        if process.poll() is not None or time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                process.kill()
            raise StartError(f"logmon for task {task!r} failed to start")
        time.sleep(0.01)


def stop(logs: Path, task: str) -> None:
    """Ask the task's logmon to drain what the task wrote and exit; wait for it."""
    process = running(logs, task)
    if process is None:
        return
    with contextlib.suppress(psutil.Error):
        process.terminate()
        try:
            process.wait(STOP_TIMEOUT_S)
        except psutil.TimeoutExpired:
            process.kill()
