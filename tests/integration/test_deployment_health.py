"""Clients report an allocation's deployment health with its status: stored once, only for
the deployment the allocation is in, with the index it arrived at."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support.api import minimal_job, node_body
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def report(client: FlaskClient, node_id: str, secret: str, alloc_id: str, **health: Any) -> Any:
    body = {"ID": alloc_id, "ClientStatus": "running", "DeploymentStatus": health}
    return client.put(f"/v1/node/{node_id}/allocations", json={"Allocs": [body]}, headers={"X-Nomad-Token": secret})


def test_health_is_recorded_once_for_the_allocations_own_deployment(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    answer = client.put("/v1/node/register", json={"Node": node_body(node_id)}).json
    assert answer is not None
    secret = str(answer["SecretID"])
    registered = client.put("/v1/jobs", json={"Job": minimal_job()}).json
    assert registered is not None
    alloc_id = insert_allocation(pg, node_id, registered["EvalID"])
    deployment = str(uuid.uuid4())
    pg.execute(
        "INSERT INTO deployments (id, namespace, job_id, job_version, job_modify_index, job_spec_modify_index, "
        "job_create_index, status, task_groups, eval_priority, create_index, modify_index) "
        "VALUES (%s, 'default', 'web', 0, 1, 1, 1, 'running', '{}', 50, 1, 1)",
        (deployment,),
    )
    pg.execute(
        "UPDATE allocations SET deployment_id = %s, deployment_status = '{\"Canary\": true}' WHERE id = %s",
        (deployment, alloc_id),
    )

    other = report(client, node_id, secret, alloc_id, DeploymentID=str(uuid.uuid4()), Healthy=True)
    assert other.status_code == 200
    assert pg.execute("SELECT deployment_status FROM allocations WHERE id = %s", (alloc_id,)).fetchone() == (
        {"Canary": True},
    )

    first = report(client, node_id, secret, alloc_id, DeploymentID=deployment, Healthy=False)
    assert first.status_code == 200
    row = pg.execute("SELECT deployment_status FROM allocations WHERE id = %s", (alloc_id,)).fetchone()
    assert row is not None and isinstance(row[0], dict)
    status = row[0]
    assert status["Healthy"] is False and status["Canary"] is True
    assert status["ModifyIndex"] == first.json["Index"] and status["Timestamp"]

    again = report(client, node_id, secret, alloc_id, DeploymentID=deployment, Healthy=True)
    assert again.status_code == 200
    row = pg.execute("SELECT deployment_status ->> 'Healthy' FROM allocations WHERE id = %s", (alloc_id,)).fetchone()
    assert row == ("false",)  # a verdict is final

    bad = report(client, node_id, secret, alloc_id, DeploymentID="not-a-uuid", Healthy=True)
    assert bad.status_code == 400 and "DeploymentID" in bad.text
