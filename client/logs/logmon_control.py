"""The client's side of logmon (client/logs/logmon.py): start a task's logmon before its driver
opens the log FIFOs, find it again after a client restart, stop it once the task is done."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

from client.drivers import LogConfig, StartError
from client.logs import logmon

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


class Launch:
    """A logmon started and perhaps not yet reading: its FIFOs exist from the start, so a
    writer that opens one blocks until logmon holds it (a driver that copies the task's output
    from its own thread, as docker's does, may start the task meanwhile). The process itself is
    spawned from a thread of its own: forking the client costs milliseconds the driver's start
    need not wait for."""

    def __init__(self, logs: Path, task: str, command: list[str] | None) -> None:
        self.logs, self.task = logs, task
        self._process: subprocess.Popen[bytes] | None = None
        self._spawn_error: OSError | None = None
        # The client's own hold on each FIFO until logmon holds it: a task that writes and exits
        # before logmon opens the FIFO (drivers.open_log) would otherwise leave it with no opener,
        # and the kernel drops what is in a pipe nobody holds.
        self._keepers = [] if command is None else [os.open(p, os.O_RDWR) for p in self._fifos()]
        self._spawner: threading.Thread | None = None
        if command is not None:
            self._spawner = threading.Thread(target=self._spawn, args=(command,), name=f"logmon-{task}", daemon=True)
            self._spawner.start()

    def _spawn(self, command: list[str]) -> None:
        try:
            self._process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # outlives the client, as the task does
                close_fds=True,
            )
        except OSError as err:
            self._spawn_error = err

    @property
    def process(self) -> subprocess.Popen[bytes] | None:
        """The logmon process once spawned (None when none was wanted, or its spawn failed)."""
        if self._spawner is not None:
            self._spawner.join()
        return self._process

    def _fifos(self) -> list[Path]:
        return [logmon.fifo_path(self.logs, self.task, stream) for stream in logmon.STREAMS]

    def _release_keepers(self) -> None:
        for fd in self._keepers:
            os.close(fd)
        self._keepers = []

    def wait(self) -> None:
        """Return once logmon holds the FIFOs open; StartError (and logmon killed, any writer
        waiting on a FIFO released) when it does not come up."""
        process = self.process
        if process is None and self._spawn_error is None:
            return  # none was wanted
        if process is None:
            self.abandon()
            raise StartError(f"logmon for task {self.task!r} failed to start: {self._spawn_error}")
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not logmon.pid_path(self.logs, self.task).exists():
            if process.poll() is not None or time.monotonic() > deadline:
                self.abandon()
                raise StartError(f"logmon for task {self.task!r} failed to start")
            time.sleep(0.005)
        self._release_keepers()  # logmon holds the FIFOs now (its pid file is written last)

    def abandon(self) -> None:
        """Kill a logmon that is not wanted any more, and make sure no writer waits for it: one
        blocked opening a FIFO is released by a reader that comes and goes (its writes then
        fail with EPIPE), and the FIFOs are removed so a later open does not block either."""
        process = self.process
        if process is None and self._spawn_error is None:
            return
        self._release_keepers()
        if process is not None:
            with contextlib.suppress(OSError):
                process.kill()
            process.wait()
        for stream in logmon.STREAMS:
            path = logmon.fifo_path(self.logs, self.task, stream)
            with contextlib.suppress(OSError):
                reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
                path.unlink()
                os.close(reader)


def launch(logs: Path, task: str, config: LogConfig) -> Launch:
    """Start the task's logmon unless one already runs (or logging is disabled); the FIFOs are
    made here, before it runs, so the drivers never open a plain file in their place."""
    if config.disabled or running(logs, task) is not None:
        return Launch(logs, task, None)
    logmon.pid_path(logs, task).unlink(missing_ok=True)
    for stream in logmon.STREAMS:
        logmon.make_fifo(logmon.fifo_path(logs, task, stream))
    command = [sys.executable, "-I", "-S", SCRIPT, str(logs), task, str(config.max_files), str(config.max_file_size_mb)]
    return Launch(logs, task, command)


def ensure(logs: Path, task: str, config: LogConfig) -> None:
    """A logmon reading the task's FIFOs, started unless one already runs; returns once it
    holds them open (a driver opening them then never blocks). StartError when it does not come up."""
    launch(logs, task, config).wait()


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
