"""A real `corral client` serves Nomad's nomad.client.* gauges on CORRAL_METRICS_BIND: what its
running allocation holds, the host it runs on, under Nomad's names and labels."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.cluster import Cluster, job
from tests.support.processes import CorralFactory, free_port, wait_for

pytestmark = pytest.mark.acceptance


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir)
    yield running
    running.close()


def gauges(url: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    text = httpx.get(url, timeout=10).text
    found: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            found.setdefault(sample.name, []).append((dict(sample.labels), sample.value))
    return found


def test_client_reports_its_allocated_resources_and_host(cluster: Cluster) -> None:
    port = free_port()
    cluster.client("c1", "--node-class", "metal", env={"CORRAL_METRICS_BIND": f"127.0.0.1:{port}"})
    task = {"Name": "t", "Driver": "mock", "Config": {}, "Resources": {"CPU": 150, "MemoryMB": 96}}
    cluster.register(job("web", [task]))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("web")] == ["running"], 60)
    url = f"http://127.0.0.1:{port}/v1/metrics"

    def allocated_cpu() -> float:
        return sum(v for _, v in gauges(f"{url}?format=prometheus").get("nomad_client_allocated_cpu", []))

    assert wait_for(lambda: allocated_cpu() == 150, 30)
    got = gauges(f"{url}?format=prometheus")
    node = {"node_id": cluster.node_id("c1"), "datacenter": "dc1", "node_class": "metal", "node_pool": "default"}
    assert got["nomad_client_allocated_cpu"] == [(node, 150.0)]
    assert got["nomad_client_allocated_memory"] == [(node, 96.0)]
    assert got["nomad_client_allocated_disk"] == [(node, 10.0)]  # the group's ephemeral disk
    assert got["nomad_client_allocations_running"] == [(node, 1.0)]
    [(labels, total)] = got["nomad_client_host_memory_total"]
    assert labels == node and total > 0
    assert got["nomad_client_uptime"][0][1] > 0
    assert {labels["cpu"] for labels, _ in got["nomad_client_host_cpu_user"]} >= {"cpu0"}
    assert got["nomad_client_unallocated_cpu"][0][1] > 0

    body = httpx.get(url, timeout=10).json()
    named = {g["Name"]: g for g in body["Gauges"]}
    assert named["nomad.client.allocated.memory"]["Value"] == 96
    assert named["nomad.client.allocated.memory"]["Labels"] == node
    assert {"nomad.client.host.memory.total", "nomad.client.host.cpu.idle", "nomad.client.uptime"} <= named.keys()


def test_a_bad_or_taken_metrics_address_stops_the_client(corral: CorralFactory, workdir: Path) -> None:
    env = {"CORRAL_ADDR": "http://127.0.0.1:9"}  # never reached: the address is refused before registering
    malformed = corral(["client"], env={**env, "CORRAL_METRICS_BIND": "nowhere"}, cwd=workdir)
    assert malformed.wait(60) != 0
    assert "CORRAL_METRICS_BIND 'nowhere' must be host:port" in malformed.output
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        bind = f"127.0.0.1:{taken.getsockname()[1]}"
        busy = corral(["client"], env={**env, "CORRAL_METRICS_BIND": bind}, cwd=workdir)
        assert busy.wait(60) != 0
    assert f"CORRAL_METRICS_BIND {bind!r}" in busy.output
    assert "node registered" not in busy.output and "registration" not in busy.output
