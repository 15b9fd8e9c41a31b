"""Dynamic host volumes through real servers and a real `corral client`: a mkdir volume created
through the API is made by the client under its host volumes directory and turns ready; a job
mounting it runs there and the file its raw_exec task writes is on the host path; a job asking for
a volume no node has is blocked, its evaluation saying why; deleting the volume removes its
directory."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import Cluster, job
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir)
    yield running
    running.close()


def _volume_job(job_id: str, source: str, script: str) -> dict[str, Any]:
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", script]},
        "Resources": {"CPU": 10, "MemoryMB": 10},
        "VolumeMounts": [{"Volume": "data", "Destination": "/data", "ReadOnly": False}],
    }
    volumes = {"data": {"Name": "data", "Type": "host", "Source": source, "ReadOnly": False}}
    return job(job_id, [task], kind="batch", Volumes=volumes)


def _volume(cluster: Cluster, volume_id: str) -> dict[str, Any]:
    found: dict[str, Any] = cluster.http.get(f"/v1/volume/host/{volume_id}").json()
    return found


def test_a_mkdir_volume_is_made_mounted_written_and_removed(cluster: Cluster, workdir: Path) -> None:
    cluster.client("c1")
    node_id = cluster.node_id("c1")
    created = cluster.http.put("/v1/volume/host/create", json={"Volume": {"Name": "scratch", "PluginID": "mkdir"}})
    assert created.status_code == 200, created.text
    volume_id = created.json()["Volume"]["ID"]
    assert wait_for(lambda: _volume(cluster, volume_id)["State"] == "ready", 60)
    host_path = workdir / "c1" / ".corral-client" / "host_volumes" / volume_id
    volume = _volume(cluster, volume_id)
    assert (volume["NodeID"], volume["HostPath"]) == (node_id, str(host_path.resolve()))
    assert host_path.is_dir()

    cluster.register(_volume_job("writer", "scratch", "echo written by $NOMAD_ALLOC_ID > data/out.txt"))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("writer")] == ["complete"], 60)
    (alloc,) = cluster.allocs("writer")
    assert (host_path / "out.txt").read_text() == f"written by {alloc['ID']}\n"

    cluster.register(_volume_job("stranded", "nowhere", "true"))
    cluster.settle()
    assert cluster.allocs("stranded") == []
    evals = cluster.http.get("/v1/job/stranded/evaluations").json()
    failed = [e["FailedTGAllocs"]["g"] for e in evals if e.get("FailedTGAllocs")]
    assert failed and failed[0]["ConstraintFiltered"] == {"missing compatible host volumes": 1}
    assert any(e["Status"] == "blocked" for e in evals)

    assert cluster.http.delete(f"/v1/volume/host/{volume_id}").status_code == 200
    assert wait_for(lambda: not host_path.exists(), 60)
