"""Variable write and read rates (sealing with AES-256-GCM, the object lock, the state index)
against peers measured in the same run on the same database, through the Flask app (no HTTP
server: the per-request work only):

- writes: PUT /v1/var/:path vs PUT /v1/jobs of as many small jobs (a plain job registration),
- reads: GET /v1/var/:path vs GET /v1/job/:id,
- the ceiling: a bare INSERT and SELECT of a row the same size through the same pool.

Usage: uv run python -m bench.variables [count] [rounds]
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient
from sqlalchemy import text

from app import create_app
from app.settings.config import Settings
from bench.common import bench_database

ITEMS = {"user": "app", "password": "x" * 64, "url": "postgres://db.internal:5432/app"}


def job(job_id: str) -> dict[str, Any]:
    return {"ID": job_id, "TaskGroups": [{"Name": "g", "Count": 0, "Tasks": [{"Name": "t", "Driver": "mock"}]}]}


def timed(count: int, step: Callable[[int], None]) -> float:
    began = time.perf_counter()
    for i in range(count):
        step(i)
    return count / (time.perf_counter() - began)


def checked(reply: Any) -> None:
    assert reply.status_code == 200, reply.get_data(as_text=True)


def one_round(
    client: FlaskClient, r: int, count: int, insert: Callable[[int, int], None], select: Callable[[int, int], None]
) -> dict[str, float]:
    """Each operation `count` times in turn, on this round's own paths and job IDs."""

    def var_put(i: int) -> None:
        checked(client.put(f"/v1/var/r{r}/v{i}", json={"Items": ITEMS}))

    def job_put(i: int) -> None:
        checked(client.put("/v1/jobs", json={"Job": job(f"r{r}-j{i}")}))

    def var_get(i: int) -> None:
        checked(client.get(f"/v1/var/r{r}/v{i}"))

    def job_get(i: int) -> None:
        checked(client.get(f"/v1/job/r{r}-j{i}"))

    return {
        "var put": timed(count, var_put),
        "job put": timed(count, job_put),
        "insert": timed(count, lambda i: insert(i, r)),
        "var get": timed(count, var_get),
        "job get": timed(count, job_get),
        "select": timed(count, lambda i: select(i, r)),
    }


def main(count: int, rounds: int) -> None:
    with bench_database() as url:
        app = create_app(Settings(database_url=url), url)
        client: FlaskClient = app.test_client()
        engine = app.extensions["corral"].engine
        with engine.begin() as conn:
            conn.execute(
                text(
                    "CREATE TABLE bench_ceiling (namespace text, path text, body bytea, PRIMARY KEY (namespace, path))"
                )
            )
        samples: dict[str, list[float]] = {
            k: [] for k in ("var put", "job put", "insert", "var get", "job get", "select")
        }
        payload = b"\x00" * 200

        def insert(i: int, r: int) -> None:
            with engine.begin() as conn:
                conn.execute(
                    text("INSERT INTO bench_ceiling VALUES ('default', :p, :b)"), {"p": f"r{r}/v{i}", "b": payload}
                )

        def select(i: int, r: int) -> None:
            with engine.begin() as conn:
                conn.execute(
                    text("SELECT body FROM bench_ceiling WHERE namespace = 'default' AND path = :p"),
                    {"p": f"r{r}/v{i}"},
                ).one()

        for r in range(rounds):
            for name, rate in one_round(client, r, count, insert, select).items():
                samples[name].append(rate)
        median = {name: statistics.median(values) for name, values in samples.items()}
        print(f"{count} operations x {rounds} rounds (medians, operations/s)")
        for kind, peer, ceiling in (("var put", "job put", "insert"), ("var get", "job get", "select")):
            print(
                f"  {kind}: {median[kind]:7.0f}/s   {peer}: {median[peer]:7.0f}/s   "
                f"bare {ceiling}: {median[ceiling]:7.0f}/s   ratio {kind}/{peer} {median[kind] / median[peer]:.2f}   "
                f"{kind}/{ceiling} {median[kind] / median[ceiling]:.2f}"
            )
        app.extensions["corral"].close()


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200, int(sys.argv[2]) if len(sys.argv) > 2 else 3)
