"""logmon: one small process per task (Nomad's logmon) that owns the task's stdout and stderr.

It makes two FIFOs, `.<task>.stdout.fifo` and `.<task>.stderr.fifo`, in the allocation's log
directory (the paths a driver opens: drivers.base.log_paths), reads them and writes
`<task>.stdout.N` files, starting a new file once one holds max_file_size MB and removing the
oldest beyond max_files. It runs in its own session and outlives the client, so a task keeps
writing (no SIGPIPE) while the client restarts; the restarted client finds it by its pid file.

This file runs as a script with the standard library only (`python -I -S logmon.py ...`):
starting it costs a bare interpreter, not the client's imports. SIGTERM: drain and exit."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import stat
import sys
from pathlib import Path

CHUNK = 1 << 16
POLL_S = 0.5
STREAMS = ("stdout", "stderr")


def fifo_path(logs: Path, task: str, stream: str) -> Path:
    return logs / f".{task}.{stream}.fifo"


def pid_path(logs: Path, task: str) -> Path:
    return logs / f".{task}.logmon.pid"


def file_index(name: str, base: str) -> int | None:
    """N of `<base>.N`, else None."""
    prefix = base + "."
    if not name.startswith(prefix) or not name[len(prefix) :].isdigit():
        return None
    return int(name[len(prefix) :])


class Rotator:
    """Appends to `<base>.N`, the highest N found (or 0), moving to N+1 when the file is full;
    keeps the max_files newest files."""

    def __init__(self, directory: Path, base: str, max_files: int, max_bytes: int) -> None:
        self.directory, self.base = directory, base
        self.max_files, self.max_bytes = max(1, max_files), max(1, max_bytes)
        found = [i for i in (file_index(p.name, base) for p in directory.iterdir()) if i is not None]
        self.index = max(found, default=0)
        self.fd = os.open(self._path(self.index), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.size = os.fstat(self.fd).st_size
        self._purge()

    def _path(self, index: int) -> Path:
        return self.directory / f"{self.base}.{index}"

    def write(self, data: bytes) -> None:
        while data:
            room = self.max_bytes - self.size
            if room <= 0:
                self._next()
                continue
            written = os.write(self.fd, data[:room])
            self.size += written
            data = data[written:]

    def _next(self) -> None:
        os.close(self.fd)
        self.index += 1
        self.fd = os.open(self._path(self.index), os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        self.size = 0
        self._purge()

    def _purge(self) -> None:
        for path in self.directory.iterdir():
            index = file_index(path.name, self.base)
            if index is not None and index <= self.index - self.max_files:
                with contextlib.suppress(FileNotFoundError):
                    path.unlink()


def make_fifo(path: Path) -> None:
    """`path` as a FIFO: kept if it is one, replaced if it is anything else."""
    with contextlib.suppress(FileNotFoundError):
        if not stat.S_ISFIFO(path.lstat().st_mode):
            path.unlink()
    if not path.exists():
        os.mkfifo(path, 0o600)


def _open_fifo(path: Path) -> tuple[int, int]:
    """The read end, and a write end held by logmon itself: the task closing its end (exiting,
    restarting) then never reads as end of file, and a restarted task finds a reader at once."""
    make_fifo(path)
    reader = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    keeper = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
    return reader, keeper


def _drain(fd: int, rotator: Rotator) -> None:
    while True:
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return
        if not data:
            return
        rotator.write(data)


def run(logs: Path, task: str, max_files: int, max_file_size_mb: int) -> None:
    stopping = False

    def stop(_signum: int, _frame: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C to the client is not for us
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    rotators: dict[int, Rotator] = {}
    for stream in STREAMS:
        reader, _keeper = _open_fifo(fifo_path(logs, task, stream))
        rotators[reader] = Rotator(logs, f"{task}.{stream}", max_files, max_file_size_mb * 1024 * 1024)
    pid_file = pid_path(logs, task)
    temporary = pid_file.with_suffix(".tmp")
    temporary.write_text(str(os.getpid()))
    temporary.replace(pid_file)  # written last: the client starts the task once it is there
    while not stopping:
        try:
            ready, _, _ = select.select(list(rotators), [], [], POLL_S)
        except InterruptedError:
            continue
        for fd in ready:
            _drain(fd, rotators[fd])
        if not logs.is_dir():
            return  # the allocation was collected: nothing is left to write to
    for fd, rotator in rotators.items():
        _drain(fd, rotator)
    with contextlib.suppress(FileNotFoundError):
        pid_file.unlink()


if __name__ == "__main__":
    run(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
