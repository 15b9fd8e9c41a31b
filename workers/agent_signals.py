"""How the agent hears Ctrl-C and SIGTERM.

The first signal asks for a graceful stop (the client destroys its tasks, then the roles, then
the database); a second one, while that stop is under way or stuck, ends everything at once, as
Nomad's agent exits on a second interrupt during its graceful leave.

Nothing here runs in a Python signal handler. A handler runs in the main thread between two
bytecodes, and it cannot run at all while the main thread waits on a lock that is not
interruptible (a buffered stream's, when the terminal or pipe behind stderr stops reading): a
stop that depended on it could hang with every role still running. Instead the interpreter's
C-level handler writes each signal's number to a pipe (`signal.set_wakeup_fd`), and a thread of
its own reads that pipe and acts, whatever the main thread is doing."""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def _noted(_signum: int, _frame: FrameType | None) -> None:
    """The Python-level handler does nothing: installing it keeps the default action (death,
    or KeyboardInterrupt) away; the wakeup pipe carries the signal to the watcher."""


class StopSignals:
    """`stop` is set by the first SIGINT or SIGTERM; `force` runs on the second (from the
    watcher thread, so it must not need the main thread). `close` puts the process's previous
    handlers and wakeup descriptor back (the agent can run inside a test's process)."""

    def __init__(self, force: Callable[[], None]) -> None:
        self.stop = threading.Event()
        self._force = force
        self._read_fd, self._write_fd = os.pipe2(os.O_CLOEXEC)
        os.set_blocking(self._write_fd, False)  # the C handler must never block
        self._previous_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        self._previous = {signum: signal.signal(signum, _noted) for signum in STOP_SIGNALS}
        self._closed = False
        self._watcher = threading.Thread(target=self._watch, name="agent-signals", daemon=True)
        self._watcher.start()

    def _watch(self) -> None:
        heard = 0
        while True:
            try:
                data = os.read(self._read_fd, 64)
            except OSError:
                return
            if not data or self._closed:
                return
            for signum in data:
                if signum not in STOP_SIGNALS:
                    continue  # another signal with a Python handler also writes its number
                heard += 1
                if heard == 1:
                    self.stop.set()
                else:
                    self._force()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._write_fd)  # the watcher reads end-of-file and returns
        self._watcher.join(timeout=1)
        with contextlib.suppress(OSError):
            os.close(self._read_fd)
