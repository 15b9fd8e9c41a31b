"""`alloc exec` into a docker task: the command runs in the task's container (`docker exec`
through the Engine API: exec_create, then exec_start with a raw socket), wired to the same
WebSocket frames as exec_session.py. Without a tty the daemon multiplexes stdout and stderr on
the socket and they travel apart; with one everything comes back as stdout and tty_size frames
resize it. When the WebSocket drops before the command exits, the command is killed."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import threading
from collections.abc import Iterator
from typing import Any

import docker
import structlog

from app.stream import exec_frames as frames
from app.stream import websocket as wsock
from client.drivers.docker_daemon import DAEMON_ERRORS
from client.endpoint.exec_session import KILL_WAIT_S, FrameSession

log = structlog.get_logger(__name__)
STREAMS = {1: "stdout", 2: "stderr"}
HEADER = 8
CHUNK = 4096


class DockerExecSession(FrameSession):
    def __init__(self, client: docker.DockerClient, container_id: str, command: list[str], tty: bool) -> None:
        """Start the command in the container: DAEMON_ERRORS when the daemon refuses it."""
        self.tty, self._api = tty, client.api
        created = self._api.exec_create(container_id, command, stdin=True, stdout=True, stderr=True, tty=tty)
        self._exec_id = str(created["Id"])
        self._socket: Any = self._api.exec_start(self._exec_id, tty=tty, socket=True)
        # exec_start hands back the HTTP response's file object; the socket under it is written to.
        raw = getattr(self._socket, "_sock", self._socket)
        if not isinstance(raw, socket.socket):
            self._socket.close()
            raise OSError("the docker endpoint gave no socket for exec (only unix and tcp endpoints do)")
        self._raw = raw
        self._pid = int(self._api.exec_inspect(self._exec_id).get("Pid") or 0)

    @property
    def pid(self) -> int:
        return self._pid

    def run(self, ws: wsock.WebSocket) -> None:
        finisher = threading.Thread(target=self._output, args=(ws,), name="docker-exec-output", daemon=True)
        finisher.start()
        self._input(ws)
        if self._running():
            log.info("exec connection dropped; killing the command", pid=self._pid)
            self.kill()
        finisher.join(KILL_WAIT_S)
        with contextlib.suppress(OSError):
            self._socket.close()

    def _running(self) -> bool:
        try:
            return bool(self._api.exec_inspect(self._exec_id).get("Running"))
        except DAEMON_ERRORS:
            return False

    def kill(self) -> None:
        """Docker has no exec kill: the command's process, by its host PID."""
        if self._pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self._pid, signal.SIGKILL)

    def _resize(self, height: int, width: int) -> None:
        with contextlib.suppress(*DAEMON_ERRORS):
            self._api.exec_resize(self._exec_id, height=height, width=width)

    def _write_stdin(self, data: bytes) -> None:
        with contextlib.suppress(OSError):
            self._raw.sendall(data)

    def _close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            if self.tty:
                self._raw.sendall(b"\x04")  # a terminal has no end of input: ^D, as typed
            else:
                self._raw.shutdown(socket.SHUT_WR)

    def _output(self, ws: wsock.WebSocket) -> None:
        """Every frame of output, then the exit code once the daemon has it."""
        with contextlib.suppress(OSError):
            for stream, data in self._frames():
                if data and not self._send(ws, frames.output(STREAMS.get(stream, "stdout"), data)):
                    return
        for name in ("stdout",) if self.tty else ("stdout", "stderr"):
            self._send(ws, frames.output_close(name))
        self._send(ws, frames.exited(self._exit_code()))
        ws.close()

    def _read(self, size: int) -> bytes:
        """Exactly `size` bytes, or fewer at the end of the stream."""
        data = b""
        while len(data) < size:
            chunk = self._raw.recv(size - len(data))
            if not chunk:
                break
            data += chunk
        return data

    def _frames(self) -> Iterator[tuple[int, bytes]]:
        """The Engine API's attach stream: raw bytes with a tty; without one, frames of an
        8-byte header (stream 1 stdout or 2 stderr, then the length, big-endian) and a payload."""
        if self.tty:
            while chunk := self._raw.recv(CHUNK):
                yield 1, chunk
            return
        while len(header := self._read(HEADER)) == HEADER:
            stream, size = header[0], struct.unpack(">I", header[4:])[0]
            payload = self._read(size)
            yield stream, payload
            if len(payload) < size:
                return

    def _exit_code(self) -> int:
        try:
            code = self._api.exec_inspect(self._exec_id).get("ExitCode")
        except DAEMON_ERRORS:
            return -1
        return int(code) if code is not None else -1
