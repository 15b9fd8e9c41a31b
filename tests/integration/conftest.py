from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient

from app import create_app
from app.config import Settings


@pytest.fixture
def client(database_url: str) -> Iterator[FlaskClient]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5), database_url)
    # No `with`: a preserved request context would break requests made from other threads.
    yield app.test_client()
    app.extensions["corral"].close()


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
