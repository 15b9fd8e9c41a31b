"""`alloc exec` on the client: a command started in a running task's context (its environment
from taskenv, its directory as the working directory, the client's user, which is the task's
under raw_exec), wired to a WebSocket of Nomad's exec frames.

Without a tty the command gets three pipes, and stdout and stderr travel apart. With one it
gets a pseudo-terminal (its controlling terminal, so ^C reaches it as SIGINT), resized on each
tty_size frame, and everything it prints comes back as stdout. The command runs in its own
process group; when the WebSocket drops before it exits, the whole group is killed."""

from __future__ import annotations

import abc
import contextlib
import fcntl
import os
import pty
import signal
import struct
import subprocess
import termios
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import structlog

from app.stream import exec_frames as frames
from app.stream import websocket as wsock

log = structlog.get_logger(__name__)
CHUNK = 4096  # bytes per output frame (Nomad's executor sends up to 1 KiB; the size is free)
KILL_WAIT_S = 5.0


@dataclass(frozen=True)
class ExecSpec:
    command: list[str]
    tty: bool
    env: dict[str, str]
    cwd: Path


def _controlling_terminal() -> None:
    """Runs in the child after setsid(): make the pty on stdin its controlling terminal."""
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class FrameSession(abc.ABC):
    """The WebSocket side every exec session shares: Nomad's input frames dispatched to the
    command (a resize, stdin bytes, the end of stdin) and output sent until the caller is gone."""

    tty: bool

    def _send(self, ws: wsock.WebSocket, text: str) -> bool:
        try:
            ws.send(text)
            return True
        except wsock.Closed:
            return False

    def _input(self, ws: wsock.WebSocket) -> None:
        """The caller's frames until its side closes (or sends a frame that is not Nomad's)."""
        while (message := ws.receive()) is not None:
            try:
                frame = frames.parse_input(message)
            except frames.FrameError as err:
                ws.close(wsock.POLICY_VIOLATION, str(err))
                return
            if frame.size is not None and self.tty and all(frame.size):
                self._resize(*frame.size)
            if frame.stdin:
                self._write_stdin(frame.stdin)
            if frame.stdin_close:
                self._close_stdin()

    @abc.abstractmethod
    def _resize(self, height: int, width: int) -> None: ...

    @abc.abstractmethod
    def _write_stdin(self, data: bytes) -> None: ...

    @abc.abstractmethod
    def _close_stdin(self) -> None: ...


class ExecSession(FrameSession):
    """One started command. `run` serves it over the WebSocket and returns once it is over."""

    def __init__(self, spec: ExecSpec) -> None:
        """Start the command: OSError (not found, not executable) or ValueError (a NUL byte)."""
        self.tty = spec.tty
        self._master: int | None = None
        if spec.tty:
            master, slave = pty.openpty()
            try:
                self.process = subprocess.Popen(
                    spec.command,
                    cwd=spec.cwd,
                    env=spec.env,
                    stdin=slave,
                    stdout=slave,
                    stderr=slave,
                    start_new_session=True,
                    preexec_fn=_controlling_terminal,
                )
            except BaseException:
                os.close(master)
                raise
            finally:
                os.close(slave)
            self._master = master
        else:
            self.process = subprocess.Popen(
                spec.command,
                cwd=spec.cwd,
                env=spec.env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )

    @property
    def pid(self) -> int:
        return self.process.pid

    def run(self, ws: wsock.WebSocket) -> None:
        readers = [threading.Thread(target=self._output, args=(ws,), name="exec-output", daemon=True)]
        if not self.tty:
            readers.append(threading.Thread(target=self._stderr, args=(ws,), name="exec-stderr", daemon=True))
        for reader in readers:
            reader.start()
        finisher = threading.Thread(target=self._finish, args=(ws, readers), name="exec-exit", daemon=True)
        finisher.start()
        self._input(ws)
        if self.process.poll() is None:
            log.info("exec connection dropped; killing the command", pid=self.pid)
            self.kill()
        finisher.join(KILL_WAIT_S)
        self._close_fds()

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(KILL_WAIT_S)

    def _resize(self, height: int, width: int) -> None:
        if self._master is not None:
            with contextlib.suppress(OSError):
                fcntl.ioctl(self._master, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))

    def _write_stdin(self, data: bytes) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self._master is not None:
                os.write(self._master, data)
            elif self.process.stdin is not None:
                self.process.stdin.write(data)
                self.process.stdin.flush()

    def _close_stdin(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            if self._master is not None:
                os.write(self._master, b"\x04")  # a terminal has no end of input: ^D, as typed
            elif self.process.stdin is not None:
                self.process.stdin.close()

    def _pump(self, ws: wsock.WebSocket, stream: str, read: IO[bytes] | int) -> None:
        while True:
            try:
                data = os.read(read, CHUNK) if isinstance(read, int) else read.read1(CHUNK)  # type: ignore[attr-defined]
            except OSError:  # EIO: a pty whose last writer is gone
                data = b""
            if not data:
                break
            if not self._send(ws, frames.output(stream, data)):
                return
        self._send(ws, frames.output_close(stream))

    def _output(self, ws: wsock.WebSocket) -> None:
        source = self._master if self._master is not None else self.process.stdout
        if source is not None:
            self._pump(ws, "stdout", source)

    def _stderr(self, ws: wsock.WebSocket) -> None:
        if self.process.stderr is not None:
            self._pump(ws, "stderr", self.process.stderr)

    def _finish(self, ws: wsock.WebSocket, readers: list[threading.Thread]) -> None:
        """Once the command exited and its output is sent: `exited`, then close."""
        code = self.process.wait()
        for reader in readers:
            reader.join()
        self._send(ws, frames.exited(exit_code(code)))
        ws.close()

    def _close_fds(self) -> None:
        if self._master is not None:
            with contextlib.suppress(OSError):
                os.close(self._master)
            self._master = None
        for pipe in (self.process.stdin, self.process.stdout, self.process.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()


def exit_code(returncode: int) -> int:
    """A shell's convention for a command killed by a signal: 128 + the signal's number."""
    return 128 - returncode if returncode < 0 else returncode
