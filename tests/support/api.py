"""Request bodies and calls for the Flask test client."""

from __future__ import annotations

from typing import Any

from flask.testing import FlaskClient
from werkzeug.test import TestResponse


def minimal_job(job_id: str = "web", **fields: Any) -> dict[str, Any]:
    return {
        "ID": job_id,
        "TaskGroups": [{"Name": "g", "Count": 2, "Tasks": [{"Name": "t", "Driver": "mock"}]}],
        **fields,
    }


def node_body(node_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "ID": node_id,
        "Name": f"node-{node_id[:4]}",
        "Datacenter": "dc1",
        "Attributes": {"kernel.name": "linux", "unique.network.ip-address": "10.0.0.1"},
        "NodeResources": {"Cpu": {"CpuShares": 4000}, "Memory": {"MemoryMB": 8192}, "Disk": {"DiskMB": 50000}},
        "ReservedResources": {"Cpu": {"CpuShares": 100}, "Memory": {"MemoryMB": 256}},
        **fields,
    }


def register(client: FlaskClient, job: dict[str, Any]) -> dict[str, Any]:
    resp = client.put("/v1/jobs", json={"Job": job})
    assert resp.status_code == 200, resp.json
    body: dict[str, Any] = json_body(resp)
    return body


def json_body(resp: TestResponse) -> Any:
    """The response's JSON body, of whatever shape the route answers (the test's own assertions
    check it); the test fails here if the response is not JSON."""
    body = resp.json
    assert body is not None, f"not a JSON response: {resp.status_code} {resp.get_data(as_text=True)[:200]}"
    return body
