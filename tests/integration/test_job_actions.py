"""Nomad 1.7's job actions on the API: GET /v1/job/:id/actions lists each task's `action`
blocks; GET /v1/job/:id/action checks its input (action, allocID, the allocation's job and
version, the task) before asking for the WebSocket upgrade, which the test client cannot give."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient
from werkzeug.test import TestResponse

from tests.support.api import minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_node

pytestmark = pytest.mark.integration

ACTIONS = [{"Name": "hello", "Command": "/bin/echo", "Args": ["hi"]}, {"Name": "date", "Command": "date"}]


def job_with_actions() -> dict[str, object]:
    task = {"Name": "t", "Driver": "mock", "Actions": ACTIONS}
    return minimal_job(TaskGroups=[{"Name": "g", "Count": 1, "Tasks": [task, {"Name": "side", "Driver": "mock"}]}])


def fields(answer: TestResponse) -> list[str]:
    return [e["field"] for e in answer.get_json()["errors"]]


def test_actions_are_listed_with_their_task_and_group(client: FlaskClient) -> None:
    register(client, job_with_actions())
    listed = client.get("/v1/job/web/actions")
    assert listed.status_code == 200, listed.get_data(as_text=True)
    assert listed.get_json() == [
        {"Name": "hello", "Command": "/bin/echo", "Args": ["hi"], "TaskName": "t", "TaskGroupName": "g"},
        {"Name": "date", "Command": "date", "Args": [], "TaskName": "t", "TaskGroupName": "g"},
    ]
    assert client.get("/v1/job/nope/actions").status_code == 404
    warnings = client.put("/v1/jobs", json={"Job": job_with_actions()}).get_json()["Warnings"]
    assert "action" not in warnings  # acted on now: no "kept but not acted on" warning


def test_running_an_action_checks_its_input_first(client: FlaskClient, pg: Conn) -> None:
    eval_id = register(client, job_with_actions())["EvalID"]
    alloc = insert_allocation(pg, insert_node(pg), eval_id)
    register(client, minimal_job("other"))
    other = insert_allocation(pg, insert_node(pg, name="n2"), eval_id, job_id="other")
    assert fields(client.get(f"/v1/job/web/action?allocID={alloc}")) == ["action"]
    assert fields(client.get("/v1/job/web/action?action=hello")) == ["allocID"]
    assert fields(client.get(f"/v1/job/web/action?action=hello&allocID={other}")) == ["allocID"]
    unknown = client.get(f"/v1/job/web/action?action=reboot&allocID={alloc}")
    assert unknown.status_code == 404 and fields(unknown) == ["action"]
    wrong_task = client.get(f"/v1/job/web/action?action=hello&allocID={alloc}&task=side")
    assert wrong_task.status_code == 404 and fields(wrong_task) == ["action"]
    # Everything checks out: only the upgrade is missing (a test client is no gunicorn worker).
    ready = client.get(f"/v1/job/web/action?action=hello&allocID={alloc}&task=t")
    assert ready.status_code == 400 and fields(ready) == ["Upgrade"]
