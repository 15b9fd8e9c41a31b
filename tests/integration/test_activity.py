"""GET /v1/operator/activity: placements and evaluations per minute, counted from the rows'
create_time; `minutes` validated; operator:read required with ACLs on."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app import create_app
from app.gc.core_evals import enqueue_forced
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, node_body, register
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def buckets(client: FlaskClient, query: str = "") -> list[dict[str, Any]]:
    resp = client.get(f"/v1/operator/activity{query}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert int(resp.headers["X-Nomad-Index"]) > 0
    found: list[dict[str, Any]] = json_body(resp)
    return found


def minute_of(pg: Conn, table: str, row_id: str) -> int:
    """The Unix second starting the minute the row was created in, as the database sees it."""
    row = pg.execute(
        f"SELECT CAST(extract(epoch FROM date_trunc('minute', create_time)) AS bigint) FROM {table} WHERE id = %s",
        (row_id,),
    ).fetchone()
    assert row is not None
    return int(str(row[0]))


def backdate(pg: Conn, alloc_ids: list[str], minutes: int) -> int:
    """Moves the allocations' creation back together (one statement, so one minute) and answers that minute."""
    pg.execute(
        "UPDATE allocations SET create_time = now() - make_interval(mins => %s) WHERE id = ANY(%s::uuid[])",
        (minutes, alloc_ids),
    )
    return minute_of(pg, "allocations", alloc_ids[0])


def test_buckets_count_the_rows_created_in_each_minute(client: FlaskClient, pg: Conn, engine: Engine) -> None:
    node_id = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    eval_id = register(client, minimal_job("web"))["EvalID"]
    eval_minute = minute_of(pg, "evaluations", eval_id)
    five_ago = backdate(pg, [insert_allocation(pg, node_id, eval_id) for _ in range(3)], 5)
    two_hours_ago = backdate(pg, [insert_allocation(pg, node_id, eval_id)], 120)
    with Session(engine) as session, session.begin():
        enqueue_forced(session)  # a core (GC) evaluation: not scheduling work, left out

    hour = buckets(client)
    assert len(hour) == 60
    assert [b["Minute"] - a["Minute"] for a, b in itertools.pairwise(hour)] == [60] * 59
    assert set(hour[0]) == {"Minute", "Placements", "Evaluations"}
    by_minute = {b["Minute"]: b for b in hour}
    assert by_minute[five_ago]["Placements"] == 3
    assert by_minute[eval_minute]["Evaluations"] == 1
    assert sum(b["Placements"] for b in hour) == 3  # the two-hour-old allocation is outside the window
    assert sum(b["Evaluations"] for b in hour) == 1

    three_hours = buckets(client, "?minutes=180")
    assert len(three_hours) == 180 and three_hours[-1]["Minute"] == hour[-1]["Minute"]
    assert {b["Minute"]: b for b in three_hours}[two_hours_ago]["Placements"] == 1
    assert sum(b["Placements"] for b in three_hours) == 4

    assert len(buckets(client, "?minutes=1")) == 1
    assert len(buckets(client, "?minutes=1440")) == 1440


@pytest.mark.parametrize("value", ["0", "1441", "-5", "hour", "1.5"])
def test_bad_minutes_is_400_naming_the_parameter(client: FlaskClient, value: str) -> None:
    resp = client.get(f"/v1/operator/activity?minutes={value}")
    assert resp.status_code == 400
    assert resp.json is not None and resp.json["errors"][0]["field"] == "minutes"


@pytest.fixture
def acl_client(database_url: str) -> Iterator[FlaskClient]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    yield app.test_client()
    app.extensions["corral"].close()


def token_with(client: FlaskClient, root: str, rules: str, name: str) -> str:
    headers = {"X-Nomad-Token": root}
    assert client.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=headers).status_code == 200
    resp = client.put("/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers=headers)
    assert resp.status_code == 200 and resp.json is not None
    secret: str = resp.json["SecretID"]
    return secret


def test_operator_read_is_required(acl_client: FlaskClient) -> None:
    root = json_body(acl_client.post("/v1/acl/bootstrap"))["SecretID"]
    operator = token_with(acl_client, root, 'operator { policy = "read" }', "operator-reader")
    jobs_only = token_with(acl_client, root, 'namespace "default" { policy = "read" }', "job-reader")
    assert acl_client.get("/v1/operator/activity").status_code == 403
    assert acl_client.get("/v1/operator/activity", headers={"X-Nomad-Token": jobs_only}).status_code == 403
    allowed = acl_client.get("/v1/operator/activity?minutes=5", headers={"X-Nomad-Token": operator})
    assert allowed.status_code == 200 and allowed.json is not None and len(allowed.json) == 5
