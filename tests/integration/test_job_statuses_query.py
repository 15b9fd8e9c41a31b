"""The job list's statuses (sql job_statuses: each table read once, grouped by job) are the
statuses corral_job_status_v1 derives job by job, in every case the function tells apart."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.store.job.job_reads import derived_statuses
from tests.support.api import minimal_job, node_body
from tests.support.rows import Conn, insert_allocation

pytestmark = pytest.mark.integration


def register(client: FlaskClient, job_id: str, namespace: str = "default", **fields: Any) -> str:
    spec = minimal_job(job_id, Namespace=namespace, **fields)
    reply = client.put(f"/v1/jobs?namespace={namespace}", json={"Job": spec})
    assert reply.status_code == 200, reply.json
    assert reply.json is not None
    return str(reply.json["EvalID"])


def set_evals(pg: Conn, job_id: str, status: str) -> None:
    pg.execute("UPDATE evaluations SET status = %s WHERE job_id = %s", (status, job_id))


def function_statuses(pg: Conn, namespace: str | None) -> dict[tuple[str, str], str]:
    rows = pg.execute(
        "SELECT namespace, id, corral_job_status_v1(j) FROM jobs j WHERE purged_at IS NULL"
        " AND (%(ns)s::text IS NULL OR namespace = %(ns)s)",
        {"ns": namespace},
    ).fetchall()
    return {(str(ns), str(job_id)): str(status) for ns, job_id, status in rows}


def test_the_list_query_derives_every_status_as_the_function_does(
    client: FlaskClient, pg: Conn, engine: Engine
) -> None:
    node = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node)}).status_code == 200
    assert client.put("/v1/namespace/other", json={"Name": "other"}).status_code == 200

    insert_allocation(pg, node, register(client, "live"), job_id="live", cpu=100)  # running
    insert_allocation(pg, node, register(client, "done"), job_id="done", client_status="complete", cpu=100)
    set_evals(pg, "done", "complete")  # dead
    register(client, "queued")  # pending: its evaluation is still to be worked on
    register(client, "blocked")
    set_evals(pg, "blocked", "blocked")  # pending
    register(client, "failed")
    set_evals(pg, "failed", "failed")  # dead: an evaluation, none to be worked on
    register(client, "forgotten")
    pg.execute("DELETE FROM evaluations WHERE job_id = 'forgotten'")  # pending: neither evaluations nor allocations
    stopping = insert_allocation(pg, node, register(client, "stopping"), job_id="stopping", cpu=100)
    pg.execute("UPDATE allocations SET desired_status = 'stop' WHERE id = %s", (stopping,))
    set_evals(pg, "stopping", "complete")  # dead: its only allocation is told to stop
    register(client, "agents", Type="system")  # running, whatever its allocations
    register(client, "agents-off", Type="system")
    assert client.delete("/v1/job/agents-off").status_code == 200  # dead once stopped
    register(client, "nightly", Type="batch", Periodic={"Spec": "0 3 * * *"})  # running
    register(client, "render", Type="batch", ParameterizedJob={})  # running
    reply = client.post("/v1/job/render/dispatch", json={})
    assert reply.status_code == 200, reply.json  # its child: pending, as its own evaluation is
    register(client, "live", namespace="other")  # pending: the same ID, another namespace

    expected = function_statuses(pg, None)
    assert len(expected) == 13
    assert set(expected.values()) == {"running", "pending", "dead"}
    with Session(engine) as session, session.begin():
        assert derived_statuses(session, None) == expected
        assert derived_statuses(session, "other") == function_statuses(pg, "other")
        assert derived_statuses(session, "default") == function_statuses(pg, "default")
    assert expected[("default", "live")] == "running" and expected[("other", "live")] == "pending"
