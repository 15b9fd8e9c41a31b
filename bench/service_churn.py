"""Service-registration churn: N allocations' Nomad services registered (one client call per
allocation as it starts, PUT /v1/node/<id>/services) and deregistered again (one call each as
it stops), against N plain job registrations (PUT /v1/jobs) in the same run, on the same
database, through the Flask app (no HTTP server: the per-request work only). Prints each rate
and the ratio of a service operation to a job registration.

Usage: uv run python -m bench.service_churn [allocations]
"""

from __future__ import annotations

import sys
import time
import uuid
from collections.abc import Callable

import psycopg
from flask.testing import FlaskClient

from app import create_app
from app.db.engines import libpq_url
from app.settings.config import Settings
from bench.common import bench_database, register_mock_job
from tests.support.api import json_body


def allocations(url: str, node_id: str, eval_id: str, count: int) -> list[str]:
    """`count` running allocations of job `bench` on the node, written by hand as the applier would."""
    ids = [str(uuid.uuid4()) for _ in range(count)]
    with psycopg.connect(libpq_url(url)) as conn:
        conn.execute(
            "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, "
            "name, desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, "
            "modify_index, alloc_modify_index) "
            "SELECT a, 'default', 'bench', 0, %s, %s, 'n1', 'g', 'bench.g[' || n || ']', 'run', 'running', 1, 1, 1, 1, "
            "state_index_own(), state_index_own(), state_index_own() "
            "FROM unnest(CAST(%s AS uuid[])) WITH ORDINALITY AS t (a, n)",
            (eval_id, node_id, ids),
        )
    return ids


def timed(label: str, count: int, step: Callable[[int], None]) -> float:
    began = time.perf_counter()
    for i in range(count):
        step(i)
    rate = count / (time.perf_counter() - began)
    print(f"  {label:34s} {rate:8.0f} /s")
    return rate


def main(count: int) -> None:
    with bench_database() as url:
        api: FlaskClient = create_app(Settings(database_url=url), url).test_client()
        node_id = str(uuid.uuid4())
        node = {
            "ID": node_id,
            "SecretID": str(uuid.uuid4()),
            "Name": "n1",
            "Datacenter": "dc1",
            "Attributes": {"kernel.name": "linux"},
            "NodeResources": {"Cpu": {"CpuShares": 100000}, "Memory": {"MemoryMB": 100000}, "Disk": {"DiskMB": 100000}},
        }
        registered = api.put("/v1/node/register", json={"Node": node})
        assert registered.status_code == 200, registered.get_data(as_text=True)
        secret = {"X-Nomad-Token": str(json_body(registered)["SecretID"])}
        ids = allocations(url, node_id, register_mock_job(url), count)

        def register(i: int) -> None:
            reg = {
                "ID": f"_nomad-task-{ids[i]}-group-g-web-http",
                "ServiceName": "web",
                "Tags": ["v1"],
                "Address": "10.0.0.1",
                "Port": 20000 + i,
            }
            answer = api.put(f"/v1/node/{node_id}/services", json={"Allocs": {ids[i]: [reg]}}, headers=secret)
            assert answer.status_code == 200 and json_body(answer)["Upserted"] == 1, answer.get_data(as_text=True)

        def deregister(i: int) -> None:
            answer = api.put(f"/v1/node/{node_id}/services", json={"Allocs": {ids[i]: []}}, headers=secret)
            assert answer.status_code == 200 and json_body(answer)["Removed"] == 1, answer.get_data(as_text=True)

        def job(i: int) -> None:
            spec = {"ID": f"job-{i:05d}", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}
            answer = api.put("/v1/jobs", json={"Job": spec})
            assert answer.status_code == 200, answer.get_data(as_text=True)

        print(f"service churn: {count} allocations, one call each")
        up = timed("service registrations", count, register)
        listed = api.get("/v1/service/web")
        assert len(json_body(listed)) == count
        down = timed("service deregistrations", count, deregister)
        jobs = timed("job registrations (peer)", count, job)
        print(f"  ratio registration/job    {up / jobs:.2f}x")
        print(f"  ratio deregistration/job  {down / jobs:.2f}x")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
