"""Nomad's `alloc exec` end to end, with ACLs on: a real server relays the WebSocket to a real
client agent, which runs the command in a raw_exec task's context. Output, exit codes, stdin,
a tty and its size, the task's environment, refusals naming the field, the ACL's alloc-exec and
alloc-node-exec, the CLI with a pipe for stdin, and no orphan once the caller hangs up."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import select
import struct
import subprocess
import termios
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import psutil
import pytest

from app.stream import exec_frames as frames
from app.stream import websocket as wsock
from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CORRAL, CorralFactory, wait_for

pytestmark = pytest.mark.acceptance

ROUTE = "/v1/client/allocation/{}/exec"


@pytest.fixture(scope="module")
def acl_cluster(
    module_corral: CorralFactory, module_database_url: str, module_workdir: Path
) -> Iterator[tuple[Cluster, str]]:
    """One cluster with ACLs on, bootstrapped once, and its client c1 (registered with the
    management token), with that token's secret: both tests run jobs of their own names."""
    running = Cluster(module_corral, module_database_url, module_workdir, {"CORRAL_ACL_ENABLED": "true"})
    secret = str(running.http.post("/v1/acl/bootstrap").json()["SecretID"])
    running.client("c1", env={"CORRAL_TOKEN": secret})
    yield running, secret
    running.close()


@pytest.fixture
def cluster(acl_cluster: tuple[Cluster, str]) -> Cluster:
    return acl_cluster[0]


@pytest.fixture
def secret(acl_cluster: tuple[Cluster, str]) -> str:
    """The management token's secret."""
    return acl_cluster[1]


@dataclass
class Session:
    stdout: bytes
    stderr: bytes
    exit_code: int | None


def open_exec(cluster: Cluster, token: str, alloc_id: str, **query: Any) -> wsock.Accepted | wsock.Refused:
    params = {"task": "t", "tty": "false", **query}
    params["command"] = json.dumps(params["command"]) if isinstance(params["command"], list) else params["command"]
    url = cluster.base + ROUTE.format(alloc_id) + "?" + urlencode(params)
    return wsock.connect(url, {"X-Nomad-Token": token}, timeout_s=30)


def run(cluster: Cluster, token: str, alloc_id: str, command: list[str], *sent: str, tty: bool = False) -> Session:
    """One exec session: send the frames, then read until the `exited` frame."""
    opened = open_exec(cluster, token, alloc_id, command=command, tty="true" if tty else "false")
    if not isinstance(opened, wsock.Accepted):
        states = cluster.http.get(f"/v1/allocation/{alloc_id}", headers={"X-Nomad-Token": token}).json()
        raise AssertionError((opened, states.get("TaskStates")))
    ws = opened.ws
    for text in sent:
        ws.send(text)
    out, err, code = b"", b"", None
    while (message := ws.receive()) is not None:
        frame = frames.parse_output(message)
        if frame.exit_code is not None:
            code = frame.exit_code
            ws.close()
        elif frame.stream == "stdout":
            out += frame.data
        elif frame.stream == "stderr":
            err += frame.data
    ws.sock.close()
    return Session(out, err, code)


def token_with(cluster: Cluster, root: dict[str, str], name: str, capabilities: list[str]) -> str:
    rules = f'namespace "default" {{ capabilities = {json.dumps(capabilities)} }}'
    assert cluster.http.put(f"/v1/acl/policy/{name}", json={"Rules": rules}, headers=root).status_code == 200
    made = cluster.http.put("/v1/acl/token", json={"Type": "client", "Policies": [name]}, headers=root)
    return str(made.json()["SecretID"])


def start(cluster: Cluster, root: dict[str, str], job_id: str, task: dict[str, Any]) -> str:
    assert cluster.http.put("/v1/jobs", json={"Job": job(job_id, [task])}, headers=root).status_code == 200
    allocs: list[dict[str, Any]] = []

    def running() -> bool:
        allocs[:] = cluster.http.get(f"/v1/job/{job_id}/allocations", headers=root).json()
        return [a["ClientStatus"] for a in allocs] == ["running"]

    assert wait_for(running, 60)
    return str(allocs[0]["ID"])


def refused(reply: wsock.Accepted | wsock.Refused) -> tuple[int, str]:
    assert isinstance(reply, wsock.Refused), "expected a refusal, got a WebSocket"
    if reply.status == 403:
        return 403, reply.body.decode()
    return reply.status, str(json.loads(reply.body)["errors"][0]["field"])


def test_alloc_exec_end_to_end(cluster: Cluster, secret: str) -> None:
    http = cluster.http
    root = {"X-Nomad-Token": secret}
    shell = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", "while true; do sleep 0.2; done"]},
        "Env": {"GREETING": "hello from the task"},
        "KillTimeout": 2_000_000_000,
        "Resources": {"CPU": 10, "MemoryMB": 10},
    }
    alloc_id = start(cluster, root, "sh", shell)

    # Output, exit codes, stdin, the task's environment and directory.
    hi = run(cluster, secret, alloc_id, ["echo", "hi"])
    assert (hi.stdout, hi.stderr, hi.exit_code) == (b"hi\n", b"", 0)
    three = run(cluster, secret, alloc_id, ["/bin/sh", "-c", "echo oops >&2; exit 3"])
    assert (three.stderr, three.exit_code) == (b"oops\n", 3)
    echoed = run(cluster, secret, alloc_id, ["cat"], frames.stdin(b"piped line\n"), frames.stdin_close())
    assert (echoed.stdout, echoed.exit_code) == (b"piped line\n", 0)
    env = run(cluster, secret, alloc_id, ["/bin/sh", "-c", 'echo "$NOMAD_ALLOC_ID|$GREETING|$(pwd)"'])
    task_dir = cluster.workdir / "c1" / ".corral-client" / "allocs" / alloc_id / "t"
    assert env.stdout.decode().strip() == f"{alloc_id}|hello from the task|{task_dir.resolve()}"

    # A tty: the command sees a terminal, of the size the caller sent.
    tty = run(
        cluster,
        secret,
        alloc_id,
        ["/bin/sh", "-c", "test -t 0 && echo is-a-tty; read go; stty size"],
        frames.tty_size(33, 101),
        "{}",  # a heartbeat, as Nomad's client sends: ignored
        frames.stdin(b"go\r"),
        tty=True,
    )
    assert b"is-a-tty" in tty.stdout and b"33 101" in tty.stdout and tty.exit_code == 0, tty

    # Refusals before any upgrade, each naming its field.
    def plain(**params: Any) -> httpx.Response:
        return http.get(ROUTE.format(alloc_id), params={"task": "t", "command": '["ls"]', **params}, headers=root)

    assert plain().status_code == 400 and plain().json()["errors"][0]["field"] == "Upgrade"
    for params, wanted in (
        ({"task": ""}, "task"),
        ({"task": "nope"}, "task"),
        ({"command": ""}, "command"),
        ({"command": "[]"}, "command"),
        ({"command": "ls -l"}, "command"),
        ({"command": "[1, 2]"}, "command"),
        ({"tty": "maybe"}, "tty"),
    ):
        reply = plain(**params)
        assert reply.status_code == 400 and reply.json()["errors"][0]["field"] == wanted, (params, reply.text)
        assert refused(open_exec(cluster, secret, alloc_id, **{"command": ["ls"], **params})) == (400, wanted)
    assert refused(open_exec(cluster, secret, "0" * 8 + alloc_id[8:], command=["ls"]))[0] == 404
    assert (
        http.get(ROUTE.format("not-a-uuid"), params={"task": "t", "command": '["ls"]'}, headers=root).status_code == 400
    )
    # The client's own refusal, relayed: a program that does not exist.
    assert refused(open_exec(cluster, secret, alloc_id, command=["/no/such/program"])) == (400, "command")

    # ACL: alloc-exec is required, and alloc-node-exec too for raw_exec (no filesystem isolation).
    reader = token_with(cluster, root, "reader", ["read-job", "read-logs"])
    assert refused(open_exec(cluster, reader, alloc_id, command=["ls"])) == (403, "Permission denied")
    execer = token_with(cluster, root, "execer", ["read-job", "alloc-exec"])
    assert refused(open_exec(cluster, execer, alloc_id, command=["ls"])) == (403, "Permission denied")
    node_execer = token_with(cluster, root, "node-execer", ["read-job", "list-jobs", "alloc-exec", "alloc-node-exec"])
    assert run(cluster, node_execer, alloc_id, ["echo", "allowed"]).stdout == b"allowed\n"

    # The CLI: stdin from a pipe, the remote exit code, Nomad's flags and checks.
    env_cli = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": cluster.base, "CORRAL_TOKEN": secret}

    def cli(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
        argv = [CORRAL, "alloc", "exec", *args]
        return subprocess.run(argv, env=env_cli, input=stdin, capture_output=True, text=True, timeout=60, check=False)

    piped = cli(alloc_id[:8], "/bin/sh", "-c", "cat; exit 4", stdin="from a pipe\n")
    assert (piped.stdout, piped.returncode) == ("from a pipe\n", 4), piped.stderr
    by_job = cli("-job", "-task", "t", "-i=false", "sh", "/bin/sh", "-c", "echo by-job; cat")
    assert (by_job.stdout, by_job.returncode) == ("by-job\n", 0), by_job.stderr
    assert "doesn't exist or it has no allocations" in cli("-job", "no-such-job", "ls").stderr
    wrong_task = cli("-task", "nope", alloc_id, "ls")
    assert wrong_task.returncode == 1 and "Could not find task named: nope" in wrong_task.stderr
    assert "A command is required" in cli(alloc_id).stderr
    assert "-i must be enabled if running with tty" in cli("-t", "-i=false", alloc_id, "ls").stderr
    assert "not a terminal" in cli("-t", alloc_id, "ls").stderr  # -t asked for, stdin a pipe
    missing = cli(alloc_id, "/no/such/program")
    assert missing.returncode == 1 and "failed to exec into task" in missing.stderr and "command" in missing.stderr

    # The CLI on a terminal: -t by default, raw mode, the terminal's size; `~.` hangs up.
    code, screen = on_terminal(
        [*cli_argv(alloc_id), "/bin/sh", "-c", "test -t 0 && echo remote-tty; read go; stty size; exit 6"],
        env_cli,
        b"go\r",
    )
    assert code == 6 and b"remote-tty" in screen and b"25 91" in screen, screen
    code, screen = on_terminal(
        [*cli_argv(alloc_id), "/bin/sh", "-c", "echo $$ > local/hung; sleep 311"], env_cli, b"\r~."
    )
    assert code == 1 and b"Connection closed" in screen, screen
    hung = int((task_dir / "local" / "hung").read_text())
    assert wait_for(lambda: not _alive(hung), 30)

    # The caller hangs up: the command and what it started are killed, no orphan is left.
    opened = open_exec(cluster, secret, alloc_id, command=["/bin/sh", "-c", "sleep 307 & echo $$ $!; wait"])
    assert isinstance(opened, wsock.Accepted)
    first = frames.parse_output(opened.ws.receive() or "")
    pids = [int(p) for p in first.data.split()]
    assert len(pids) == 2 and all(psutil.pid_exists(p) for p in pids)
    opened.ws.sock.close()
    assert wait_for(lambda: not any(_alive(p) for p in pids), 30), pids

    # Mock tasks run no process: exec into one is refused, naming the task.
    mock_alloc = start(cluster, root, "mocked", mock_task("t"))
    assert refused(open_exec(cluster, secret, mock_alloc, command=["ls"])) == (400, "task")

    # A task that no longer runs: 404.
    assert http.delete("/v1/job/sh", headers=root).status_code == 200
    gone = lambda: http.get(f"/v1/allocation/{alloc_id}", headers=root).json()["ClientStatus"] != "running"  # noqa: E731
    assert wait_for(gone, 60)
    assert refused(open_exec(cluster, secret, alloc_id, command=["ls"]))[0] == 404


def cli_argv(alloc_id: str) -> list[str]:
    return [CORRAL, "alloc", "exec", alloc_id]


def on_terminal(argv: list[str], env: dict[str, str], typed: bytes) -> tuple[int, bytes]:
    """Run the CLI on a pseudo-terminal of 25x91, type `typed` once the remote command is up
    (its first output, or after a moment), and return its exit code and everything it printed."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 25, 91, 0, 0))
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    screen = b""
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.5)
            if not ready:
                if typed and (screen or time.monotonic() > deadline - 55):
                    os.write(master, typed)
                    typed = b""
                if process.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: the CLI exited and closed the terminal
                break
            screen += chunk
        return process.wait(10), screen
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
    except OSError:
        return os.path.exists(f"/proc/{pid}")


def handshake_session(cluster: Cluster, alloc_id: str, first: str, headers: dict[str, str]) -> tuple[bytes, int | None]:
    """Open with ?ws_handshake=true as a browser does (no token header unless given), send
    `first` as the first frame, then `echo hi`'s output, or the close code and reason."""
    query = {"task": "t", "tty": "false", "command": json.dumps(["echo", "hi"]), "ws_handshake": "true"}
    opened = wsock.connect(cluster.base + ROUTE.format(alloc_id) + "?" + urlencode(query), headers, timeout_s=30)
    assert isinstance(opened, wsock.Accepted), opened  # upgraded before any check, as Nomad does
    ws = opened.ws
    ws.send(first)
    out, code = b"", None
    while (message := ws.receive()) is not None:
        frame = frames.parse_output(message)
        if frame.exit_code is not None:
            code = frame.exit_code
            ws.close()
        elif frame.stream == "stdout":
            out += frame.data
    ws.sock.close()
    if code is None:
        return ws.close_reason.encode(), ws.close_code
    return out, code


def test_ws_handshake_carries_the_token_in_the_first_frame(cluster: Cluster, secret: str) -> None:
    root = {"X-Nomad-Token": secret}
    shell = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", "while true; do sleep 0.2; done"]},
        "KillTimeout": 2_000_000_000,
        "Resources": {"CPU": 10, "MemoryMB": 10},
    }
    alloc_id = start(cluster, root, "handshake-sh", shell)

    def frame(token: str) -> str:
        return json.dumps({"version": 1, "auth_token": token})

    assert handshake_session(cluster, alloc_id, frame(secret), {}) == (b"hi\n", 0)
    assert handshake_session(cluster, alloc_id, frame(secret), root) == (b"hi\n", 0)  # header and frame agree
    mismatch = handshake_session(cluster, alloc_id, frame("0" * 36), root)
    assert mismatch == (b"handshake auth token mismatched auth header token", wsock.POLICY_VIOLATION)
    assert handshake_session(cluster, alloc_id, frame("0" * 36), {}) == (b"ACL token not found", 1008)
    assert handshake_session(cluster, alloc_id, frame(""), {}) == (b"Permission denied", 1008)  # anonymous
    reader = token_with(
        cluster, root, "handshake-reader", ["read-job", "alloc-exec"]
    )  # no alloc-node-exec for raw_exec
    assert handshake_session(cluster, alloc_id, frame(reader), {}) == (b"Permission denied", 1008)
    wrong = handshake_session(cluster, alloc_id, json.dumps({"version": 2, "auth_token": secret}), {})
    assert wrong == (b"unexpected handshake value: 2", 1008)
    # After the check, the input's refusals are close frames too, naming the field.
    query = {"task": "nope", "command": '["ls"]', "ws_handshake": "true"}
    opened = wsock.connect(cluster.base + ROUTE.format(alloc_id) + "?" + urlencode(query), {}, timeout_s=30)
    assert isinstance(opened, wsock.Accepted)
    opened.ws.send(frame(secret))
    assert opened.ws.receive() is None and opened.ws.close_code == 1008
    assert opened.ws.close_reason.startswith("task: unknown task name 'nope'")
    opened.ws.sock.close()
