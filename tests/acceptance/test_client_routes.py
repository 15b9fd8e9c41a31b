"""Nomad's client routes end to end, with ACLs on: a real client agent runs a raw_exec shell
task; the server proxies fs (ls, stat, cat, readat, logs with follow), stats, restart and
signal to it, and the CLI drives the same routes. One cluster for the whole module's story."""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.cluster import Cluster, job
from tests.support.processes import CORRAL, Corral, CorralFactory, wait_for

pytestmark = pytest.mark.acceptance

# Records its pid (a restart changes it), leaves files for fs to find (one in secrets/, a symlink
# out of the allocation directory), logs a line, and answers SIGUSR1 with a line in a file.
SCRIPT = (
    "echo $$ > local/pid; echo hello > local/hello.txt; echo hidden > secrets/token; ln -sfn / local/root; "
    "trap 'echo got-usr1; echo got-usr1 >> local/signals' USR1; echo started; while true; do sleep 0.2; done"
)


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir, {"CORRAL_ACL_ENABLED": "true"})
    yield running
    running.close()


def cli(cluster: Cluster, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": "/usr/bin:/bin", "CORRAL_ADDR": cluster.base, "CORRAL_TOKEN": token}
    return subprocess.run([CORRAL, *args], env=env, capture_output=True, text=True, timeout=60, check=False)


def token_with(cluster: Cluster, root: dict[str, str], name: str, rules: str) -> dict[str, str]:
    assert cluster.http.put(f"/v1/acl/policy/{name}", json={"Rules": rules}, headers=root).status_code == 200
    made = cluster.http.put("/v1/acl/token", json={"Type": "client", "Policies": [name]}, headers=root)
    return {"X-Nomad-Token": made.json()["SecretID"]}


def start(cluster: Cluster, root: dict[str, str]) -> tuple[Corral, str]:
    home = cluster.workdir / "c1"
    home.mkdir(exist_ok=True)
    env = {**cluster.env, "CORRAL_ADDR": cluster.base, "CORRAL_TOKEN": root["X-Nomad-Token"]}
    agent = cluster.corral(["client", "--name", "c1", "--driver", "raw_exec"], env=env, cwd=home)
    assert wait_for(lambda: cluster.node_status("c1") == "ready", 60), agent.output
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", SCRIPT]},
        "KillTimeout": 2_000_000_000,
        "Resources": {"CPU": 10, "MemoryMB": 10},
    }
    assert cluster.http.put("/v1/jobs", json={"Job": job("sh", [task])}, headers=root).status_code == 200
    allocs: list[dict[str, Any]] = []

    def running() -> bool:
        allocs[:] = cluster.http.get("/v1/job/sh/allocations", headers=root).json()
        return [a["ClientStatus"] for a in allocs] == ["running"]

    assert wait_for(running, 60), agent.output
    return agent, str(allocs[0]["ID"])


def field(reply: httpx.Response) -> str:
    return str(reply.json()["errors"][0]["field"])


def test_client_routes_end_to_end(cluster: Cluster) -> None:
    http = cluster.http
    boot = http.post("/v1/acl/bootstrap")
    root = {"X-Nomad-Token": boot.json()["SecretID"]}
    agent, alloc_id = start(cluster, root)
    task_dir = cluster.workdir / "c1" / ".corral-client" / "allocs" / alloc_id / "t"
    assert wait_for(lambda: (task_dir / "local" / "root").is_symlink(), 30)

    def get(route: str, headers: dict[str, str] = root, **params: Any) -> httpx.Response:
        return http.get(f"/v1/client/{route}", params=params, headers=headers)

    # fs: ls, stat, cat, readat of the task's files and logs.
    names = {f["Name"]: f for f in get(f"fs/ls/{alloc_id}").json()}
    assert {"alloc", "t"} <= set(names) and names["t"]["IsDir"] and "alloc.json" not in names
    assert {f["Name"] for f in get(f"fs/ls/{alloc_id}", path="t/local").json()} >= {"hello.txt", "pid"}
    info = get(f"fs/stat/{alloc_id}", path="t/local/hello.txt").json()
    assert info["Size"] == 6 and not info["IsDir"] and info["FileMode"] == "-rw-r--r--" and info["ContentType"]
    assert get(f"fs/cat/{alloc_id}", path="t/local/hello.txt").content == b"hello\n"
    assert get(f"fs/readat/{alloc_id}", path="t/local/hello.txt", offset=1, limit=3).content == b"ell"
    assert get(f"fs/cat/{alloc_id}", path="alloc/logs/t.stdout.0").content == b"started\n"
    assert get(f"fs/stat/{alloc_id}", path="nope").status_code == 404
    whole = get(f"fs/stream/{alloc_id}", path="t/local/hello.txt", follow="false").json()
    assert base64.b64decode(whole["Data"]) == b"hello\n" and whole["File"] == "t/local/hello.txt"

    # Escapes (by .. or by a symlink out) and the secrets directory are refused, naming path.
    for path in ("../..", "t/local/root/etc"):
        refused = get(f"fs/ls/{alloc_id}", path=path)
        assert refused.status_code == 400 and field(refused) == "path", refused.text
    assert field(get(f"fs/cat/{alloc_id}", path="t/local/root/etc/hostname")) == "path"
    secret = get(f"fs/cat/{alloc_id}", path="t/secrets/token")
    assert secret.status_code == 403 and field(secret) == "path" and b"hidden" not in secret.content

    # Logs: Nomad's frames, and a follow that goes on delivering.
    frame = get(f"fs/logs/{alloc_id}", task="t", type="stdout").json()
    assert base64.b64decode(frame["Data"]) == b"started\n" and frame["File"] == "alloc/logs/t.stdout.0"
    assert frame["Offset"] == len(b"started\n")
    assert get(f"fs/logs/{alloc_id}", task="t", plain="true", origin="end", offset=3).content == b"ed\n"

    # Stats from the task's real processes; the host's from /proc.
    stats = get(f"allocation/{alloc_id}/stats").json()
    assert stats["Tasks"]["t"]["ResourceUsage"]["MemoryStats"]["RSS"] > 0
    assert stats["ResourceUsage"]["MemoryStats"]["RSS"] > 0 and stats["Timestamp"] > 0
    host = get("stats", node_id=cluster.node_id("c1")).json()
    assert host["Memory"]["Total"] > 0 and host["CPU"] and host["Uptime"] > 0
    # Without node_id: the one ready client on this server's host (Nomad's agent answers for its own).
    local = get("stats")
    assert local.status_code == 200 and local.json()["Memory"]["Total"] == host["Memory"]["Total"]
    with_stats = cli(cluster, root["X-Nomad-Token"], "alloc", "status", "-stats", alloc_id)
    assert with_stats.returncode == 0 and "Task Resources:" in with_stats.stdout, with_stats.stderr
    assert "Memory Stats" in with_stats.stdout and "RSS" in with_stats.stdout

    # Signal reaches the process; a bad signal or task is refused naming it.
    signals = task_dir / "local" / "signals"
    sent = http.post(f"/v1/client/allocation/{alloc_id}/signal", json={"Task": "t", "Signal": "SIGUSR1"}, headers=root)
    assert sent.status_code == 200, sent.text
    assert wait_for(lambda: signals.exists() and "got-usr1" in signals.read_text(), 30)
    bad = http.post(f"/v1/client/allocation/{alloc_id}/signal", json={"Task": "t", "Signal": "SIGNOPE"}, headers=root)
    assert bad.status_code == 400 and field(bad) == "Signal"
    nobody = http.post(f"/v1/client/allocation/{alloc_id}/signal", json={"Task": "x", "Signal": "USR1"}, headers=root)
    assert nobody.status_code == 404 and field(nobody) == "Task"

    # Restart in place: a new process, one more restart, Nomad's event.
    first_pid = (task_dir / "local" / "pid").read_text()
    again = http.put(f"/v1/client/allocation/{alloc_id}/restart", json={"TaskName": "t"}, headers=root)
    assert again.status_code == 200, again.text

    def restarted() -> bool:
        state = http.get(f"/v1/allocation/{alloc_id}", headers=root).json()["TaskStates"]["t"]
        return bool(state["Restarts"] == 1 and state["State"] == "running")

    assert wait_for(restarted, 60)
    assert wait_for(lambda: (task_dir / "local" / "pid").read_text() not in ("", first_pid), 30)
    events = [
        e["Type"] for e in http.get(f"/v1/allocation/{alloc_id}", headers=root).json()["TaskStates"]["t"]["Events"]
    ]
    assert "Restart Signaled" in events and "Signaling" in events

    # Follow from the end: the stream delivers what the task writes after it was opened.
    params = {"task": "t", "follow": "true", "origin": "end", "offset": "0"}
    with http.stream("GET", f"/v1/client/fs/logs/{alloc_id}", params=params, headers=root) as streamed:
        assert streamed.status_code == 200
        body = {"Task": "t", "Signal": "SIGUSR1"}
        assert http.post(f"/v1/client/allocation/{alloc_id}/signal", json=body, headers=root).status_code == 200
        received = b""
        for chunk in streamed.iter_bytes():
            received += b"".join(base64.b64decode(f["Data"]) for f in _frames(chunk) if f.get("Data"))
            if b"got-usr1" in received:
                break
    assert received == b"got-usr1\n"

    # ACL: read-job and read-logs, but no read-fs.
    reader = token_with(cluster, root, "reader", 'namespace "default" { capabilities = ["read-job", "read-logs"] }')
    assert get(f"fs/cat/{alloc_id}", reader, path="t/local/hello.txt").status_code == 403
    assert get(f"fs/ls/{alloc_id}", reader).status_code == 403
    assert get(f"fs/logs/{alloc_id}", reader, task="t", plain="true").status_code == 200
    assert http.put(f"/v1/client/allocation/{alloc_id}/restart", json={}, headers=reader).status_code == 403
    assert get("stats", reader, node_id=cluster.node_id("c1")).status_code == 403

    # The CLI on the same routes, with Nomad's layout and exit codes.
    secret_id = root["X-Nomad-Token"]
    listing = cli(cluster, secret_id, "alloc", "fs", alloc_id[:8], "t")
    assert listing.returncode == 0 and listing.stdout.split("\n")[0].split() == [
        "Mode",
        "Size",
        "Modified",
        "Time",
        "Name",
    ]
    assert "local/" in listing.stdout
    assert cli(cluster, secret_id, "alloc", "fs", alloc_id, "t/local/hello.txt").stdout == "hello\n"
    stat = cli(cluster, secret_id, "alloc", "fs", "-stat", alloc_id, "t/local/hello.txt")
    assert stat.returncode == 0 and "hello.txt" in stat.stdout and "Content Type" in stat.stdout
    escaped = cli(cluster, secret_id, "alloc", "fs", alloc_id, "../..")
    assert escaped.returncode == 1 and "path" in escaped.stderr
    assert cli(cluster, secret_id, "alloc", "signal", "-s", "SIGUSR1", alloc_id, "t").returncode == 0
    assert wait_for(lambda: signals.read_text().count("got-usr1") >= 1, 30)
    unknown = cli(cluster, secret_id, "alloc", "restart", alloc_id, "nope")
    assert unknown.returncode == 1 and "Could not find task named: nope" in unknown.stderr
    assert cli(cluster, secret_id, "alloc", "restart", alloc_id, "t").returncode == 0
    assert wait_for(
        lambda: http.get(f"/v1/allocation/{alloc_id}", headers=root).json()["TaskStates"]["t"]["Restarts"] == 2, 60
    )

    # An unreachable client: a prompt 502 naming its node and address.
    address = http.get(f"/v1/node/{cluster.node_id('c1')}", headers=root).json()["LinkAddr"]
    agent.kill_all()
    gone = get(f"fs/ls/{alloc_id}")
    assert gone.status_code == 502 and address in gone.json()["detail"]


def _frames(chunk: bytes) -> list[dict[str, Any]]:
    """The StreamFrames in a chunk of the followed answer (objects back to back)."""
    decoder, text, found, at = json.JSONDecoder(), chunk.decode(), [], 0
    while at < len(text):
        frame, at = decoder.raw_decode(text, at)
        found.append(frame)
    return found
