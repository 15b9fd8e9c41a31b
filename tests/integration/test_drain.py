"""The drain endpoint and the drainer's pacing, driven tick by tick."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.leader.node_lifecycle import node_lifecycle
from tests.support.api import json_body, minimal_job, node_body
from tests.support.rows import insert_allocation, scalar

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def tick(engine: Engine) -> int:
    with Session(engine) as session, session.begin():
        return node_lifecycle(session)


def test_drain_paces_migrations_by_max_parallel_and_completes(client: FlaskClient, engine: Engine, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    client.put("/v1/node/register", json={"Node": node_body(node_id)})
    group = {**minimal_job()["TaskGroups"][0], "Count": 3, "Migrate": {"MaxParallel": 2}}
    client.put("/v1/jobs", json={"Job": minimal_job("web", TaskGroups=[group])})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    allocs = [insert_allocation(pg, node_id, eval_id) for _ in range(3)]
    answer = client.post(f"/v1/node/{node_id}/drain", json={"DrainSpec": {"Deadline": 0}})
    assert answer.status_code == 200
    assert pg.execute("SELECT scheduling_eligibility, drain FROM nodes").fetchone() == ("ineligible", True)

    assert tick(engine) == 2
    migrating = "SELECT id FROM allocations WHERE (desired_transition->>'Migrate')::boolean ORDER BY create_index, id"
    assert len(pg.execute(migrating).fetchall()) == 2
    assert pg.execute("SELECT count(*) FROM evaluations WHERE triggered_by = 'node-drain'").fetchone() == (1,)
    assert tick(engine) == 0, "two in flight: max_parallel reached"

    first = str(scalar(pg, migrating))
    replacement = insert_allocation(pg, node_id, eval_id)
    pg.execute("UPDATE allocations SET previous_allocation = %s WHERE id = %s", (first, replacement))
    pg.execute("UPDATE allocations SET desired_status = 'stop' WHERE id = %s", (first,))
    pg.execute("""UPDATE allocations SET deployment_status = '{"Healthy": true}' WHERE id = %s""", (replacement,))
    assert tick(engine) == 1, "one replacement is healthy: one more may go"
    pg.execute("UPDATE allocations SET desired_status = 'stop' WHERE id = ANY(%s)", (allocs,))
    pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (replacement,))
    assert tick(engine) == 1  # nothing left on the node: the drain completes
    assert pg.execute("SELECT drain, last_drain->>'Status' FROM nodes").fetchone() == (False, "complete")


def test_drain_input_is_checked_and_cancel_can_mark_eligible(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    client.put("/v1/node/register", json={"Node": node_body(node_id)})
    bad = client.post(f"/v1/node/{node_id}/drain", json={"DrainSpec": {"Deadline": "soon"}})
    assert bad.status_code == 400 and json_body(bad)["errors"][0]["field"] == "DrainSpec.Deadline"
    mismatch = client.post(f"/v1/node/{node_id}/drain", json={"NodeID": str(uuid.uuid4()), "DrainSpec": {}})
    assert mismatch.status_code == 400 and json_body(mismatch)["errors"][0]["field"] == "NodeID"
    assert client.post(f"/v1/node/{uuid.uuid4()}/drain", json={"DrainSpec": {}}).status_code == 404
    client.post(f"/v1/node/{node_id}/drain", json={"DrainSpec": {"Deadline": -1, "IgnoreSystemJobs": True}})
    assert pg.execute("SELECT drain_strategy->>'IgnoreSystemJobs' FROM nodes").fetchone() == ("true",)
    client.post(f"/v1/node/{node_id}/drain", json={"MarkEligible": True})
    assert pg.execute("SELECT drain, scheduling_eligibility, last_drain->>'Status' FROM nodes").fetchone() == (
        False,
        "eligible",
        "canceled",
    )


def test_forced_drain_moves_everything_at_once_and_system_jobs_go_last(
    client: FlaskClient, engine: Engine, pg: Conn
) -> None:
    node_id = str(uuid.uuid4())
    client.put("/v1/node/register", json={"Node": node_body(node_id)})
    client.put("/v1/jobs", json={"Job": minimal_job("web")})  # migrate.max_parallel defaults to 1
    client.put("/v1/jobs", json={"Job": minimal_job("sys", Type="system")})
    web_eval = str(scalar(pg, "SELECT id FROM evaluations WHERE job_id = 'web'"))
    sys_eval = str(scalar(pg, "SELECT id FROM evaluations WHERE job_id = 'sys'"))
    web = [insert_allocation(pg, node_id, web_eval) for _ in range(3)]
    system = insert_allocation(pg, node_id, sys_eval, job_id="sys")
    client.post(f"/v1/node/{node_id}/drain", json={"DrainSpec": {"Deadline": -1}})
    assert tick(engine) == 3, "past the deadline: all at once, max_parallel or not"
    migrating = "SELECT id::text FROM allocations WHERE (desired_transition->>'Migrate')::boolean"
    assert {r[0] for r in pg.execute(migrating).fetchall()} == set(web)
    pg.execute("UPDATE allocations SET desired_status = 'stop' WHERE id = ANY(%s)", (web,))
    assert tick(engine) == 1  # then the system job's allocation
    assert {r[0] for r in pg.execute(migrating).fetchall()} == {*web, system}


def report_health(client: FlaskClient, node_id: str, secret: str, alloc_id: str, healthy: bool | None) -> None:
    """The client's update for a running allocation outside any deployment, with the health it
    judged by the group's migrate block (none yet: no DeploymentStatus)."""
    body: dict[str, Any] = {"ID": alloc_id, "ClientStatus": "running"}
    if healthy is not None:
        body["DeploymentStatus"] = {"Healthy": healthy}
    answer = client.put(f"/v1/node/{node_id}/allocations", json={"Allocs": [body]}, headers={"X-Nomad-Token": secret})
    assert answer.status_code == 200, answer.json


def test_the_next_allocation_moves_only_once_the_replacement_is_healthy(
    client: FlaskClient, engine: Engine, pg: Conn
) -> None:
    """Nomad's drainer paces migrations by healthy replacements (migrate.min_healthy_time), not
    by running ones: a replacement that runs but has no health verdict yet keeps the slot."""
    draining, other = str(uuid.uuid4()), str(uuid.uuid4())
    client.put("/v1/node/register", json={"Node": node_body(draining)})
    answer = client.put("/v1/node/register", json={"Node": node_body(other)}).json
    assert answer is not None
    secret = str(answer["SecretID"])
    group = {**minimal_job()["TaskGroups"][0], "Count": 2, "Migrate": {"MaxParallel": 1}}
    client.put("/v1/jobs", json={"Job": minimal_job("web", TaskGroups=[group])})
    eval_id = str(scalar(pg, "SELECT id FROM evaluations"))
    for _ in range(2):
        insert_allocation(pg, draining, eval_id)
    client.post(f"/v1/node/{draining}/drain", json={"DrainSpec": {"Deadline": 0}})
    assert tick(engine) == 1, "max_parallel 1: one at a time"
    migrating = "SELECT id FROM allocations WHERE (desired_transition->>'Migrate')::boolean"
    first = str(scalar(pg, migrating))

    replacement = insert_allocation(pg, other, eval_id, client_status="pending")
    pg.execute("UPDATE allocations SET previous_allocation = %s WHERE id = %s", (first, replacement))
    pg.execute("UPDATE allocations SET desired_status = 'stop' WHERE id = %s", (first,))
    report_health(client, other, secret, replacement, healthy=None)
    assert tick(engine) == 0, "the replacement runs but is not healthy yet: it keeps the slot"
    assert len(pg.execute(migrating).fetchall()) == 1

    report_health(client, other, secret, replacement, healthy=True)
    assert tick(engine) == 1, "healthy: the second allocation may go"
    assert len(pg.execute(migrating).fetchall()) == 2
