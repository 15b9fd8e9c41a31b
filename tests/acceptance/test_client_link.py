"""The link from the servers to a real client agent: someone who can read the nodes table (the
node's address and secret hash) cannot drive the client, the servers' own restart-all and
signal-all (a blank task) reach it, a restarted client keeps answering, and every forwarded
request leaves a line in the server's log."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
import pytest

from app.acl import client_link as link
from app.stream import websocket as wsock
from tests.support.cluster import Cluster, job
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance

SCRIPT = "echo $$ > local/pid; trap 'echo got-usr1 >> local/signals' USR1; while true; do sleep 0.2; done"


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir)
    yield running
    running.close()
    # raw_exec tasks outlive their client by design: end the test's own (SCRIPT wrote its pid).
    for pid_file in workdir.glob("*/.corral-client/allocs/*/*/local/pid"):
        with contextlib.suppress(ValueError, ProcessLookupError, PermissionError):
            os.kill(int(pid_file.read_text().strip()), signal.SIGKILL)


def signed_the_old_way(secret_hash: str, method: str, path: str, query: dict[str, str]) -> dict[str, str]:
    """What a database reader could sign before: the node's stored secret hash as the key."""
    stamp = int(time.time())
    proof = link.request_proof(secret_hash.encode(), method, path, query, stamp)
    return {link.PROOF_HEADER: proof, link.TIME_HEADER: str(stamp)}


def start_task(cluster: Cluster) -> str:
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", SCRIPT]},
        "KillTimeout": 2_000_000_000,
        "Resources": {"CPU": 10, "MemoryMB": 10},
    }
    cluster.register(job("sh", [task]))
    allocs: list[dict[str, Any]] = []

    def running() -> bool:
        allocs[:] = cluster.allocs("sh")
        return [a["ClientStatus"] for a in allocs] == ["running"]

    assert wait_for(running, 60)
    return str(allocs[0]["ID"])


def test_a_database_reader_cannot_drive_a_client_and_the_servers_can(cluster: Cluster) -> None:
    agent = cluster.client("c1")
    alloc_id = start_task(cluster)
    task_dir = cluster.workdir / "c1" / ".corral-client" / "allocs" / alloc_id / "t"
    assert wait_for(lambda: (task_dir / "local" / "pid").exists(), 30)

    row = cluster.pg.execute("SELECT http_addr, secret_hash FROM nodes WHERE name = 'c1'").fetchone()
    assert row is not None
    address, stored = str(row[0]), str(row[1])
    exec_path = f"/v1/client/allocation/{alloc_id}/exec"
    query = {"task": "t", "command": json.dumps(["id"]), "tty": "false", "nonce": "n1"}
    headers = signed_the_old_way(stored, "GET", exec_path, query)
    answer = wsock.connect(f"http://{address}{exec_path}?{urlencode(query)}", headers, timeout_s=10)
    assert isinstance(answer, wsock.Refused) and answer.status == 403
    restart_path = f"/v1/client/allocation/{alloc_id}/restart"
    query = {"all_tasks": "true", "nonce": "n2"}
    refused = httpx.put(
        f"http://{address}{restart_path}", params=query, headers=signed_the_old_way(stored, "PUT", restart_path, query)
    )
    assert refused.status_code == 403

    # The servers' own requests, with a blank task: every task.
    first_pid = (task_dir / "local" / "pid").read_text()
    restarted = cluster.http.put(f"/v1/client/allocation/{alloc_id}/restart", json={"AllTasks": True})
    assert restarted.status_code == 200, restarted.text
    assert wait_for(lambda: (task_dir / "local" / "pid").read_text() not in ("", first_pid), 30)
    assert wait_for(
        lambda: cluster.http.get(f"/v1/allocation/{alloc_id}").json()["TaskStates"]["t"]["State"] == "running", 30
    )
    signalled = cluster.http.post(f"/v1/client/allocation/{alloc_id}/signal", json={"Signal": "SIGUSR1"})
    assert signalled.status_code == 200, signalled.text
    signals = task_dir / "local" / "signals"
    assert wait_for(lambda: signals.exists() and "got-usr1" in signals.read_text(), 30)

    # A restarted client answers with the key it kept, then with what its registration hands it.
    agent.process.terminate()  # its tasks keep running; the next client re-attaches to them
    agent.wait(60)
    again = cluster.client("c1")
    answers: list[str] = []

    def listed_again() -> bool:
        reply = cluster.http.get(f"/v1/client/fs/ls/{alloc_id}")
        answers.append(f"{reply.status_code} {reply.text[:300]}")
        return reply.status_code == 200

    assert wait_for(listed_again, 120), (answers[-3:], again.output[-3000:], cluster.server.output[-3000:])
    listed = cluster.http.get(f"/v1/client/fs/ls/{alloc_id}")
    assert listed.headers["content-type"] == "application/json" and "t" in [f["Name"] for f in listed.json()]

    logged = [line for line in cluster.server.output.splitlines() if "client request forwarded" in line]
    assert any("anonymous" in line and "restart" in line and alloc_id in line for line in logged), logged
    assert any("signal" in line for line in logged) and any("fs/ls" in line for line in logged)
