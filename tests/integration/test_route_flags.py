"""Nomad's field flags of list routes and the stop flags: GET /v1/allocations ?task_states and
?resources, GET /v1/nodes ?os, DELETE /v1/job/:id ?global and ?no_shutdown_delay."""

from __future__ import annotations

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support.api import json_body, minimal_job
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration

Conn = psycopg.Connection[tuple[object, ...]]
TASK_STATE = '{"t": {"State": "running", "Failed": false, "Restarts": 0, "Events": []}}'


def register(client: FlaskClient, job_id: str = "web") -> str:
    resp = client.put("/v1/jobs", json={"Job": minimal_job(job_id)})
    assert resp.status_code == 200, resp.json
    return str(json_body(resp)["EvalID"])


def running_alloc(client: FlaskClient, pg: Conn, node: str, job_id: str = "web", status: str = "running") -> str:
    alloc = insert_allocation(pg, node, register(client, job_id), job_id=job_id, client_status=status)
    pg.execute("UPDATE allocations SET task_states = %s::jsonb WHERE id = %s", (TASK_STATE, alloc))
    return alloc


def test_alloc_list_leaves_task_states_out_with_task_states_false(client: FlaskClient, pg: Conn) -> None:
    running_alloc(client, pg, insert_node(pg))
    [default] = json_body(client.get("/v1/allocations"))
    assert default["TaskStates"]["t"]["State"] == "running"
    [without] = json_body(client.get("/v1/allocations?task_states=false"))
    assert without["TaskStates"] is None
    assert {k: v for k, v in without.items() if k != "TaskStates"} == {
        k: v for k, v in default.items() if k != "TaskStates"
    }
    [explicit] = json_body(client.get("/v1/allocations?task_states=true&resources=true"))
    assert explicit["TaskStates"] == default["TaskStates"]
    assert "AllocatedResources" in explicit


@pytest.mark.parametrize("query", ["task_states=none", "resources=maybe"])
def test_alloc_list_flags_must_be_booleans(client: FlaskClient, query: str) -> None:
    resp = client.get(f"/v1/allocations?{query}")
    assert resp.status_code == 400
    assert json_body(resp)["errors"][0]["field"] == query.split("=")[0]


def test_node_list_adds_the_os_name_with_os_true(client: FlaskClient, pg: Conn) -> None:
    node = insert_node(pg)
    pg.execute(
        'UPDATE nodes SET attributes = \'{"os.name": "ubuntu", "kernel.name": "linux"}\'::jsonb WHERE id = %s',
        (node,),
    )
    [plain] = json_body(client.get("/v1/nodes"))
    assert "Attributes" not in plain
    [with_os] = json_body(client.get("/v1/nodes?os=true"))
    assert with_os["Attributes"] == {"os.name": "ubuntu"}
    assert client.get("/v1/nodes?os=perhaps").status_code == 400


def test_job_stop_with_no_shutdown_delay_marks_the_unfinished_allocations(client: FlaskClient, pg: Conn) -> None:
    node = insert_node(pg)
    live = running_alloc(client, pg, node)
    done = insert_allocation(pg, node, register(client), client_status="complete")
    other = running_alloc(client, pg, node, job_id="other")
    resp = client.delete("/v1/job/web?no_shutdown_delay=true&global=true")
    assert resp.status_code == 200, resp.json
    index = json_body(resp)["Index"]
    rows = {str(r[0]): r[1] for r in pg.execute("SELECT id, desired_transition FROM allocations").fetchall()}
    assert rows[live] == {"NoShutdownDelay": True}
    assert rows[done] == {} and rows[other] == {}
    modified = pg.execute("SELECT modify_index FROM allocations WHERE id = %s", (live,)).fetchone()
    assert modified == (index,)
    assert json_body(client.get(f"/v1/allocation/{live}"))["DesiredTransition"]["NoShutdownDelay"] is True


def test_job_stop_without_the_flag_leaves_allocations_alone(client: FlaskClient, pg: Conn) -> None:
    live = running_alloc(client, pg, insert_node(pg))
    assert client.delete("/v1/job/web?global=false").status_code == 200
    assert pg.execute("SELECT desired_transition FROM allocations WHERE id = %s", (live,)).fetchone() == ({},)


@pytest.mark.parametrize("flag", ["global", "no_shutdown_delay"])
def test_job_stop_flags_must_be_booleans(client: FlaskClient, pg: Conn, flag: str) -> None:
    register(client)
    resp = client.delete(f"/v1/job/web?{flag}=sometimes")
    assert resp.status_code == 400
    assert json_body(resp)["errors"][0]["field"] == flag
    stopped = pg.execute("SELECT stop FROM jobs WHERE id = 'web'").fetchone()
    assert stopped == (False,)


def test_alloc_stop_with_no_shutdown_delay_marks_the_allocation(client: FlaskClient, pg: Conn) -> None:
    alloc = running_alloc(client, pg, insert_node(pg))
    resp = client.post(f"/v1/allocation/{alloc}/stop?no_shutdown_delay=true")
    assert resp.status_code == 200, resp.json
    row = pg.execute("SELECT desired_transition FROM allocations WHERE id = %s", (alloc,)).fetchone()
    assert row == ({"Migrate": True, "NoShutdownDelay": True},)
