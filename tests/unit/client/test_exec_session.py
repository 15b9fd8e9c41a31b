"""The client's exec session over a real WebSocket, without a cluster: pipes keep stdout and
stderr apart and pass stdin; a tty is a terminal of the size sent; a signal's death is 128 + N;
a frame that is not Nomad's closes with 1008; and a caller that hangs up leaves no process."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import pytest

from app.stream import exec_frames as frames
from app.stream import websocket as wsock
from client.endpoint.exec_session import ExecSession, ExecSpec, exit_code
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit


@dataclass
class Result:
    out: bytes = b""
    err: bytes = b""
    code: int | None = None
    first: list[bytes] = field(default_factory=list)


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.create_server(("127.0.0.1", 0))
    yield sock
    sock.close()


def serve(listener: socket.socket, session: ExecSession) -> threading.Thread:
    def run() -> None:
        conn, _ = listener.accept()
        raw = b""
        while b"\r\n\r\n" not in raw:
            raw += conn.recv(4096)
        key = next(
            line.split(b":", 1)[1].strip()
            for line in raw.split(b"\r\n")
            if line.lower().startswith(b"sec-websocket-key")
        )
        conn.sendall(wsock.accept_response(key.decode()))
        session.run(wsock.WebSocket.server(conn))
        conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def connect(listener: socket.socket) -> wsock.WebSocket:
    opened = wsock.connect(f"http://127.0.0.1:{listener.getsockname()[1]}/x", {}, timeout_s=5)
    assert isinstance(opened, wsock.Accepted)
    return opened.ws


def spec(tmp_path: Path, command: list[str], tty: bool = False) -> ExecSpec:
    return ExecSpec(command, tty, {"PATH": "/usr/bin:/bin", "MARK": "from-the-task"}, tmp_path)


def session_result(ws: wsock.WebSocket, *sent: str) -> Result:
    for text in sent:
        ws.send(text)
    result = Result()
    while (message := ws.receive()) is not None:
        frame = frames.parse_output(message)
        if frame.exit_code is not None:
            result.code = frame.exit_code
        elif frame.stream == "stdout":
            result.out += frame.data
        else:
            result.err += frame.data
    return result


def test_pipes_carry_stdin_stdout_stderr_and_the_exit_code(tmp_path: Path, listener: socket.socket) -> None:
    script = 'cat; echo "$MARK $(pwd)" >&2; exit 5'
    server = serve(listener, ExecSession(spec(tmp_path, ["/bin/sh", "-c", script])))
    ws = connect(listener)
    result = session_result(ws, frames.stdin(b"line one\n"), "{}", frames.stdin_close())
    assert (result.out, result.err, result.code) == (b"line one\n", f"from-the-task {tmp_path}\n".encode(), 5)
    server.join(10)
    assert not server.is_alive()


def test_a_tty_is_a_terminal_of_the_size_sent(tmp_path: Path, listener: socket.socket) -> None:
    command = ["/bin/sh", "-c", "test -t 0 && echo term; read go; stty size"]
    serve(listener, ExecSession(spec(tmp_path, command, tty=True)))
    result = session_result(connect(listener), frames.tty_size(40, 120), frames.stdin(b"go\r"))
    assert b"term" in result.out and b"40 120" in result.out and result.code == 0


def test_death_by_signal_is_128_plus_the_signal(tmp_path: Path, listener: socket.socket) -> None:
    serve(listener, ExecSession(spec(tmp_path, ["/bin/sh", "-c", "kill -TERM $$"])))
    assert session_result(connect(listener)).code == 143
    assert exit_code(-9) == 137 and exit_code(3) == 3


def test_a_frame_that_is_not_nomads_closes_the_session(tmp_path: Path, listener: socket.socket) -> None:
    session = ExecSession(spec(tmp_path, ["/bin/sh", "-c", "sleep 300"]))
    serve(listener, session)
    ws = connect(listener)
    ws.send('{"stdin": {"data": "not base64!"}}')
    assert ws.receive() is None and ws.close_code == wsock.POLICY_VIOLATION
    assert wait_for(lambda: session.process.poll() is not None, 10)


def test_hanging_up_kills_the_command_and_its_children(tmp_path: Path, listener: socket.socket) -> None:
    command = ["/bin/sh", "-c", "sleep 300 & echo $$ $!; wait"]
    server = serve(listener, ExecSession(spec(tmp_path, command)))
    ws = connect(listener)
    first = frames.parse_output(ws.receive() or "")
    pids = [int(p) for p in first.data.split()]
    assert len(pids) == 2 and all(alive(p) for p in pids)
    ws.sock.close()  # no close frame: the connection just drops
    assert wait_for(lambda: not any(alive(p) for p in pids), 10), pids
    server.join(10)
    assert not server.is_alive()


def test_a_program_that_cannot_start_raises(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        ExecSession(spec(tmp_path, ["/no/such/program"]))
    with pytest.raises(ValueError):
        ExecSession(spec(tmp_path, ["echo", "nul\x00byte"]))


def alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
