"""POST /v1/node/:id/purge (Nomad's Node.Deregister): the node leaves the scheduler at once,
each affected job gets a node-update evaluation, and the scheduler marks the node's allocations
lost; a node that never ran anything is deleted outright."""

from __future__ import annotations

import time
import uuid

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.pipeline.plan_apply.applier import apply_next
from app.settings.config import Settings
from tests.support.api import minimal_job, node_body, register
from tests.support.pipeline import claim, handling
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def test_a_node_that_never_ran_anything_is_deleted(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    resp = client.post(f"/v1/node/{node_id}/purge")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.json
    assert body is not None and body["EvalIDs"] is None and body["EvalCreateIndex"] == 0
    assert body["NodeModifyIndex"] == body["Index"] > 0
    assert client.get(f"/v1/node/{node_id}").status_code == 404
    assert pg.execute("SELECT count(*) FROM nodes").fetchone() == (0,)
    again = client.post(f"/v1/node/{node_id}/purge")
    assert again.status_code == 404 and "NodeID" in again.get_data(as_text=True)
    assert client.post("/v1/node/not-a-uuid/purge").status_code == 400


def test_a_node_with_allocations_is_set_down_and_its_jobs_evaluated(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job("web"))
    register(client, minimal_job("api"))
    node_id = insert_node(pg)
    eval_id = pg.execute("SELECT id::text FROM evaluations WHERE job_id = 'web'").fetchone()[0]  # type: ignore[index]
    insert_allocation(pg, node_id, str(eval_id), job_id="web")
    insert_allocation(pg, node_id, str(eval_id), job_id="api")
    pg.commit()
    body = client.post(f"/v1/node/{node_id}/purge").json
    assert body is not None and len(body["EvalIDs"]) == 2 and body["EvalCreateIndex"] == body["Index"]
    rows = pg.execute(
        "SELECT job_id, triggered_by, node_id::text, create_index FROM evaluations WHERE id = ANY(%s) ORDER BY job_id",
        ([uuid.UUID(e) for e in body["EvalIDs"]],),
    ).fetchall()
    assert rows == [("api", "node-update", node_id, body["Index"]), ("web", "node-update", node_id, body["Index"])]
    node = client.get(f"/v1/node/{node_id}").json
    assert node is not None
    assert (node["Status"], node["SchedulingEligibility"], node["StatusDescription"]) == (
        "down",
        "ineligible",
        "node purged",
    )
    # Purged again while already down: Nomad evaluates the node's jobs again.
    again = client.post(f"/v1/node/{node_id}/purge").json
    assert again is not None and len(again["EvalIDs"]) == 2 and again["Index"] > body["Index"]


def test_the_scheduler_marks_the_purged_nodes_allocations_lost(
    client: FlaskClient, pg: Conn, engine: Engine, database_url: str
) -> None:
    register(client, minimal_job("web"))
    node_id = insert_node(pg)
    first_eval = pg.execute("SELECT id::text FROM evaluations").fetchone()[0]  # type: ignore[index]
    pg.execute("UPDATE evaluations SET status = 'complete'")
    alloc = insert_allocation(pg, node_id, str(first_eval), job_id="web")
    pg.commit()
    assert client.post(f"/v1/node/{node_id}/purge").status_code == 200
    held = claim(engine)
    assert held is not None and held.evaluation.triggered_by == "node-update"
    deadline = time.monotonic() + 30  # a hang, not a speed
    with handling(engine, database_url, held, Settings(database_url=database_url)) as (thread, lead):
        assert lead.term is not None
        while thread.is_alive():
            assert time.monotonic() < deadline, "the worker is still waiting for a verdict"
            with Session(bind=lead.connection) as session, session.begin():
                if apply_next(session, lead.term) is None:
                    thread.join(0.02)
    row = pg.execute("SELECT desired_status, client_status FROM allocations WHERE id = %s", (alloc,)).fetchone()
    assert row == ("stop", "lost")
