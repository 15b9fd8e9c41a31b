"""Host volumes and rotated logs through real servers and real `corral client`s: a group asking
for a host volume lands only on the node that declares it and reads the file in it, while a
read-write ask of a read-only volume is not placed and the evaluation says why; a task's log is
rotated per its logs block, `alloc logs` reads its tail across the files, and it keeps flowing
through a client restart (the task's logmon outlives the client)."""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from client.logs import logmon_control
from tests.support.cluster import Cluster, job
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance
MB = 1024 * 1024


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    # A TTL far longer than a client restart: the node must not be marked down meanwhile.
    running = Cluster(corral, database_url, workdir, {"CORRAL_HEARTBEAT_MIN_TTL_S": "60"})
    yield running
    running.close()


def _reader(read_only: bool) -> dict[str, Any]:
    return {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/cat", "args": ["data/greeting.txt"]},
        "Resources": {"CPU": 10, "MemoryMB": 10},
        "VolumeMounts": [{"Volume": "data", "Destination": "/data", "ReadOnly": read_only}],
    }


def _volume_job(job_id: str, read_only: bool) -> dict[str, Any]:
    volumes = {"data": {"Name": "data", "Type": "host", "Source": "shared", "ReadOnly": read_only}}
    return job(job_id, [_reader(read_only)], kind="batch", Volumes=volumes)


def test_a_host_volume_group_lands_only_where_the_volume_is(cluster: Cluster, workdir: Path) -> None:
    shared = workdir / "shared"
    shared.mkdir()
    (shared / "greeting.txt").write_text("hello from the host volume\n")
    cluster.client("plain")
    # The config file's form (the flag's path would land in the test helper's log file name).
    (workdir / "holder").mkdir()
    config = {"server": cluster.base, "host_volume": {"shared": {"path": str(shared), "read_only": True}}}
    (workdir / "holder" / "holder.json").write_text(json.dumps(config))
    cluster.client("holder", "--config", "holder.json")
    node = cluster.http.get(f"/v1/node/{cluster.node_id('holder')}").json()
    assert node["HostVolumes"] == {"shared": {"Name": "shared", "Path": str(shared.resolve()), "ReadOnly": True}}

    cluster.register(_volume_job("reads", read_only=True))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("reads")] == ["complete"], 60)
    (alloc,) = cluster.allocs("reads")
    assert alloc["NodeID"] == cluster.node_id("holder")
    logs = cluster.http.get(f"/v1/client/fs/logs/{alloc['ID']}", params={"task": "t", "plain": "true"})
    assert logs.text == "hello from the host volume\n"

    cluster.register(_volume_job("writes", read_only=False))  # the node's volume is read-only
    cluster.settle()
    assert cluster.allocs("writes") == []
    evals = cluster.http.get("/v1/job/writes/evaluations").json()
    failed = [e["FailedTGAllocs"]["g"] for e in evals if e.get("FailedTGAllocs")]
    assert failed and failed[0]["ConstraintFiltered"] == {"missing compatible host volumes": 2}


def test_logs_rotate_read_across_files_and_survive_a_client_restart(cluster: Cluster, workdir: Path) -> None:
    first = cluster.client("c1")
    # 3 MB at once (three rotations of 1 MB files), then one numbered line every 50 ms.
    script = (
        "head -c 3145728 /dev/zero | tr '\\0' 'x'; echo; i=0; while true; do echo line-$i; i=$((i+1)); sleep 0.05; done"
    )
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", script]},
        "KillTimeout": 2_000_000_000,
        "Resources": {"CPU": 10, "MemoryMB": 10},
        "LogConfig": {"MaxFiles": 2, "MaxFileSizeMB": 1},
    }
    cluster.register(job("chatty", [task]))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("chatty")] == ["running"], 60)
    alloc_id = cluster.allocs("chatty")[0]["ID"]
    logs_dir = workdir / "c1" / ".corral-client" / "allocs" / alloc_id / "alloc" / "logs"

    def tail() -> str:
        answer = cluster.http.get(
            f"/v1/client/fs/logs/{alloc_id}", params={"task": "t", "origin": "end", "offset": 4096, "plain": "true"}
        )
        return answer.text if answer.status_code == 200 else ""

    assert wait_for(lambda: "line-30\n" in tail(), 60), (sorted(logs_dir.iterdir()), tail()[-300:])
    files = {p.name: p.stat().st_size for p in logs_dir.glob("t.stdout.*")}
    assert len(files) <= 2 and all(size <= MB for size in files.values()) and "t.stdout.3" in files, files
    logmon = logmon_control.running(logs_dir, "t")
    assert logmon is not None

    first.process.send_signal(signal.SIGTERM)
    assert first.wait(30) == 0

    def on_disk() -> int:  # the bytes logged so far; no client is there to serve them
        return sum(p.stat().st_size + int(p.name.rsplit(".", 1)[1]) * MB for p in logs_dir.glob("t.stdout.*"))

    while_down = on_disk()
    assert wait_for(lambda: on_disk() > while_down + 50, 30)  # logged while no client runs
    second = cluster.client("c1")
    assert wait_for(lambda: "restored allocations" in second.output, 30)
    again = logmon_control.running(logs_dir, "t")
    assert again is not None and again.pid == logmon.pid

    def probe() -> str:
        return tail() or "nothing"

    assert wait_for(lambda: "line-" in tail(), 90), (probe(), second.output[-3000:])
    mark = tail().rsplit("line-", 1)[1]
    assert wait_for(lambda: tail().rsplit("line-", 1)[1] != mark, 30)

    cluster.http.delete("/v1/job/chatty").raise_for_status()
    assert wait_for(lambda: cluster.allocs("chatty")[0]["ClientStatus"] == "complete", 60)
    assert wait_for(lambda: not psutil.pid_exists(logmon.pid), 30)
