"""What ACL enforcement costs a request: GET /v1/job/:id and GET /v1/jobs?namespace=* through the
Flask app (no HTTP server: the per-request work only) with ACLs off, with a management token and
with a client token whose policy must be parsed (cached) and checked, in the same run on the same
database. Each round is interleaved so machine noise hits every variant alike; medians printed.

Usage: uv run python -m bench.acl_overhead [requests per round] [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time
from typing import Any

from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from bench.common import bench_database

JOBS = 50


def job(job_id: str) -> dict[str, Any]:
    return {"ID": job_id, "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [{"Name": "t", "Driver": "mock"}]}]}


def rate(client: FlaskClient, path: str, headers: dict[str, str], count: int) -> float:
    began = time.perf_counter()
    for _ in range(count):
        reply = client.get(path, headers=headers)
        assert reply.status_code == 200, reply.get_data(as_text=True)
    return count / (time.perf_counter() - began)


def main(count: int, rounds: int) -> None:
    with bench_database() as url:
        off = create_app(Settings(database_url=url), url).test_client()
        on = create_app(Settings(database_url=url, acl_enabled=True), url).test_client()
        root = {"X-Nomad-Token": on.post("/v1/acl/bootstrap").json["SecretID"]}
        rules = 'namespace "default" { policy = "read" }\nnamespace "team-*" { policy = "write" }'
        on.put("/v1/acl/policy/readers", json={"Rules": rules}, headers=root)
        made = on.put("/v1/acl/token", json={"Type": "client", "Policies": ["readers"]}, headers=root)
        reader = {"X-Nomad-Token": made.json["SecretID"]}
        for i in range(JOBS):
            off.put("/v1/jobs", json={"Job": job(f"job-{i:03d}")})
        variants = {"acl off": (off, {}), "management": (on, root), "client token": (on, reader)}
        for path in ("/v1/job/job-007", "/v1/jobs?namespace=*"):
            samples: dict[str, list[float]] = {name: [] for name in variants}
            for _ in range(rounds):
                for name, (client, headers) in variants.items():
                    samples[name].append(rate(client, path, headers, count))
            base = statistics.median(samples["acl off"])
            print(f"{path} ({count} requests x {rounds} rounds)")
            for name, values in samples.items():
                median = statistics.median(values)
                print(f"  {name:13s} {median:8.0f} req/s  ({median / base:.2f}x acl off)")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300, int(sys.argv[2]) if len(sys.argv) > 2 else 5)
