"""alloc exec's pieces without a cluster: Nomad's exec frames, the WebSocket wrapper over a
real TCP socket (handshake, messages both ways, refusal with a body, ping, close), the CLI's
Go-style flags and escape sequences."""

from __future__ import annotations

import base64
import json
import socket
import threading
from collections.abc import Callable, Iterator
from typing import Any

import click
import pytest
from wsproto.connection import Connection, ConnectionType
from wsproto.events import Ping

from app.cli.allocs.alloc_exec import EscapeReader, Options, Usage, check, parse_args, task_of
from app.stream import exec_frames as frames
from app.stream import websocket as wsock

pytestmark = pytest.mark.unit


# -- frames -----------------------------------------------------------------------------------


def test_input_frames_as_nomad_sends_them() -> None:
    assert frames.parse_input(frames.stdin(b"\x00hi")) == frames.Input(stdin=b"\x00hi")
    assert frames.parse_input('{"stdin": {"data": "aGk="}}').stdin == b"hi"
    assert frames.parse_input(frames.stdin_close()) == frames.Input(stdin_close=True)
    assert frames.parse_input(frames.tty_size(24, 80)) == frames.Input(size=(24, 80))
    assert frames.parse_input("{}") == frames.Input()  # a heartbeat


@pytest.mark.parametrize(
    "text",
    ["", "[]", '"x"', '{"stdin": 1}', '{"stdin": {"data": "%%%"}}', '{"stdin": {"data": 5}}',
     '{"tty_size": {"height": -1}}', '{"tty_size": {"width": "80"}}', '{"tty_size": {"height": true}}',
     '{"tty_size": []}'],
)  # fmt: skip
def test_bad_input_frames_are_refused(text: str) -> None:
    with pytest.raises(frames.FrameError):
        frames.parse_input(text)


@pytest.mark.parametrize("text", ["", "[]", '"x"', "{"])
def test_output_frames_that_are_not_json_objects_are_refused(text: str) -> None:
    with pytest.raises(frames.FrameError, match="JSON object"):
        frames.parse_output(text)


def test_output_frames_round_trip() -> None:
    assert json.loads(frames.output("stderr", b"x")) == {"stderr": {"data": base64.b64encode(b"x").decode()}}
    assert frames.parse_output(frames.output("stdout", b"out")) == frames.Output(stream="stdout", data=b"out")
    assert frames.parse_output(frames.output_close("stderr")) == frames.Output(stream="stderr", close=True)
    assert json.loads(frames.exited(3)) == {"exited": True, "result": {"exit_code": 3}}
    assert frames.parse_output(frames.exited(0)).exit_code == 0
    assert frames.parse_output('{"exited": true, "result": {}}').exit_code == 0  # Go omits a zero


# -- the WebSocket over a real socket ---------------------------------------------------------


def _read_request(conn: socket.socket) -> dict[str, str]:
    raw = b""
    while b"\r\n\r\n" not in raw:
        raw += conn.recv(4096)
    lines = raw.split(b"\r\n\r\n")[0].decode().split("\r\n")[1:]
    return {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines)}


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    sock = socket.create_server(("127.0.0.1", 0))
    yield sock
    sock.close()


def _serve(listener: socket.socket, session: Callable[[wsock.WebSocket], None]) -> threading.Thread:
    def run() -> None:
        conn, _ = listener.accept()
        headers = _read_request(conn)
        assert wsock.wants_upgrade(headers)
        conn.sendall(wsock.accept_response(headers["sec-websocket-key"], {"X-Proof": "p"}))
        ws = wsock.WebSocket.server(conn)
        session(ws)
        conn.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _url(listener: socket.socket) -> str:
    return f"http://127.0.0.1:{listener.getsockname()[1]}/v1/x?a=1"


def test_messages_flow_both_ways_and_close_cleanly(listener: socket.socket) -> None:
    def echo(ws: wsock.WebSocket) -> None:
        while (message := ws.receive()) is not None:
            ws.send(message.upper())
        assert ws.close_code == 1000

    server = _serve(listener, echo)
    opened = wsock.connect(_url(listener), {"X-Token": "t"}, timeout_s=5)
    assert isinstance(opened, wsock.Accepted) and opened.headers["x-proof"] == "p"
    big = "x" * 200_000  # larger than one read
    for text in ("hello", big):
        opened.ws.send(text)
        assert opened.ws.receive() == text.upper()
    opened.ws.close()
    assert opened.ws.receive() is None and opened.ws.close_code == 1000
    server.join(5)
    assert not server.is_alive()


def test_a_ping_is_answered_and_a_drop_ends_receive(listener: socket.socket) -> None:
    def ping_then_drop(ws: wsock.WebSocket) -> None:
        ws.sock.sendall(Connection(ConnectionType.SERVER).send(Ping(payload=b"p")))
        ws.send("after ping")

    server = _serve(listener, ping_then_drop)
    opened = wsock.connect(_url(listener), {}, timeout_s=5)
    assert isinstance(opened, wsock.Accepted)
    assert opened.ws.receive() == "after ping"
    server.join(5)
    assert opened.ws.receive() is None  # dropped without a close frame
    with pytest.raises(wsock.Closed):
        opened.ws.send("too late")


def test_a_refusal_carries_its_status_and_body(listener: socket.socket) -> None:
    body = b'{"errors": [{"field": "task", "message": "unknown"}]}'

    def refuse() -> None:
        conn, _ = listener.accept()
        _read_request(conn)
        head = f"HTTP/1.1 400 Bad Request\r\nContent-Length: {len(body)}\r\nX-Proof: q\r\n\r\n".encode()
        conn.sendall(head + body)
        conn.close()

    threading.Thread(target=refuse, daemon=True).start()
    answer = wsock.connect(_url(listener), {}, timeout_s=5)
    assert answer == wsock.Refused(400, {"content-length": str(len(body)), "x-proof": "q"}, body)


def test_upgrade_requests_are_recognised() -> None:
    wanted = {"upgrade": "websocket", "connection": "keep-alive, Upgrade", "sec-websocket-key": "k"}
    assert wsock.wants_upgrade({**wanted, "sec-websocket-version": "13"})
    assert not wsock.wants_upgrade(wanted)
    assert not wsock.wants_upgrade({**wanted, "sec-websocket-version": "13", "upgrade": "h2c"})
    # RFC 6455's own example.
    assert wsock.accept_token("dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="


# -- the CLI's flags and escapes --------------------------------------------------------------


def test_flags_are_parsed_as_go_parses_them() -> None:
    opts = parse_args(["-task", "web", "-i=false", "--t=true", "-e=%", "ab12", "sh", "-c", "ls -l"])
    assert opts == Options(task="web", stdin=False, tty=True, escape="%", args=["ab12", "sh", "-c", "ls -l"])
    assert parse_args(["-job", "-t", "web", "sh"]) == Options(job=True, tty=True, args=["web", "sh"])
    assert parse_args(["--", "-x", "sh"]).args == ["-x", "sh"]
    for bad, message in (
        (["-i=maybe"], "invalid boolean"),
        (["-task"], "flag needs an argument"),
        (["-x", "a", "b"], "not defined"),
    ):
        with pytest.raises(Usage, match=message):
            parse_args(bad)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([], "An allocation ID is required"),
        (["-job"], "A job ID is required"),
        (["a", "ls"], "at least two characters"),
        (["ab"], "A command is required"),
        (["-t", "-i=false", "ab", "ls"], "-i must be enabled"),
        (["-t=false", "-e", "~~", "ab", "ls"], "-e requires 'none' or a single character"),
    ],
)
def test_nomad_checks_the_arguments(argv: list[str], message: str) -> None:
    with pytest.raises(Usage, match=message):
        check(parse_args(argv))


def test_the_escape_sequence_closes_only_at_the_start_of_a_line() -> None:
    reader = EscapeReader("~")
    assert reader.feed(b"a~.b\r") == (b"a~.b\r", False)  # mid-line: passed through
    assert reader.feed(b"~~") == (b"~", False)  # doubled: sends itself once
    assert reader.feed(b"\n~x") == (b"\n~x", False)  # escape + other: both
    assert reader.feed(b"\r~") == (b"\r", False)  # pending across reads
    assert reader.feed(b".rest") == (b"", True)


def test_the_task_is_the_groups_only_one_or_must_be_named() -> None:
    def allocation(*names: str) -> Any:  # the keys task_of reads
        tasks = [{"Name": n} for n in names]
        return {"ID": "0123456789ab", "TaskGroup": "g", "Job": {"TaskGroups": [{"Name": "g", "Tasks": tasks}]}}

    assert task_of(allocation("web"), "") == "web"
    assert task_of(allocation("web", "side"), "side") == "side"
    with pytest.raises(click.ClickException, match=r"(?s)running the following tasks:\n  \* web\n  \* side\n"):
        task_of(allocation("web", "side"), "")
    with pytest.raises(click.ClickException, match="Could not find task named: nope, Tasks available: web, side"):
        task_of(allocation("web", "side"), "nope")
