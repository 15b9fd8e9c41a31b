"""Every object the API serves decodes into the structs of Nomad's own API package, type by
type, down through the nested structs (issue 42, "Prove it"): a job and its versions, an
allocation whose tasks have started, restarted and finished (as the client reports them), a
node after a drain (Nomad's client body, ``"Meta": null`` included), evaluations, a deployment,
the agent's self-description and the event stream's frames. The oracle is
tests/support/nomad_api_types.py (read off Nomad's ``api`` package); the key lists are checked by
test_api_shapes.py."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from client.tasks import task_state
from tests.support.api import minimal_job, node_body, register
from tests.support.events import events, has, read_frames
from tests.support.full_job import FULL_JOB
from tests.support.nomad_json import RFC3339, problems
from tests.support.rows import insert_allocation, insert_deployment

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
T0_NS = 1_700_000_000_000_000_000
SECOND = 1_000_000_000
# The object each event topic's payload carries, under its key.
PAYLOADS = {"Job": "Job", "Allocation": "Allocation", "Node": "Node", "Evaluation": "Evaluation"}
PAYLOADS["Deployment"] = "Deployment"


def get(client: FlaskClient, path: str) -> Any:
    resp = client.get(path)
    assert resp.status_code == 200, resp.json
    return resp.json


def assert_decodes(value: Any, go_type: str, where: str) -> None:
    found = problems(value, go_type, where)
    assert found == [], "\n".join(found)


def node_with_secret(client: FlaskClient) -> tuple[str, str]:
    node_id, secret = str(uuid.uuid4()), str(uuid.uuid4())
    reply = client.put("/v1/node/register", json={"Node": node_body(node_id, SecretID=secret)})
    assert reply.status_code == 200, reply.json
    return node_id, secret


def reported_states() -> dict[str, Any]:
    """Two tasks as the client reports them: one running after a restart, one finished."""
    running = {
        **task_state.new_state(),
        "State": "running",
        "Restarts": 1,
        "StartedAt": task_state.rfc3339(T0_NS),
        "LastRestart": task_state.rfc3339(T0_NS + 5 * SECOND),
        "Events": [{"Type": "Started", "Time": T0_NS, "DisplayMessage": "Task started by client"}],
    }
    finished = {
        **task_state.new_state(),
        "State": "dead",
        "StartedAt": task_state.rfc3339(T0_NS),
        "FinishedAt": task_state.rfc3339(T0_NS + 2 * SECOND),
    }
    return {"main": running, "init": finished}


def report(client: FlaskClient, node_id: str, secret: str, alloc_id: str, states: dict[str, Any]) -> Any:
    body = {"Allocs": [{"ID": alloc_id, "ClientStatus": "running", "TaskStates": states}]}
    return client.put(f"/v1/node/{node_id}/allocations", json=body, headers={"X-Nomad-Token": secret})


def test_jobs_and_versions_decode(client: FlaskClient) -> None:
    register(client, FULL_JOB)
    register(client, {**FULL_JOB, "Priority": 60})
    register(client, minimal_job("cron", Type="batch", Periodic={"Spec": "*/5 * * * *"}))
    register(client, minimal_job("param", Type="batch", ParameterizedJob={"Payload": "optional"}))
    for job_id in ("full", "cron", "param"):
        assert_decodes(get(client, f"/v1/job/{job_id}"), "Job", job_id)
    for version in get(client, "/v1/job/full/versions")["Versions"]:
        assert_decodes(version, "Job", "Versions[]")
    assert_decodes(get(client, "/v1/jobs"), "[]*JobListStub", "Jobs")
    assert_decodes(get(client, "/v1/job/full/summary"), "JobSummary", "JobSummary")


def test_allocation_with_started_restarted_and_finished_tasks_decodes(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = node_with_secret(client)
    eval_id = register(client, minimal_job("web"))["EvalID"]
    alloc_id = insert_allocation(pg, node_id, eval_id)
    assert report(client, node_id, secret, alloc_id, reported_states()).status_code == 200
    alloc = get(client, f"/v1/allocation/{alloc_id}")
    assert_decodes(alloc, "Allocation", "Allocation")
    states = alloc["TaskStates"]
    assert states["main"]["LastRestart"] == task_state.rfc3339(T0_NS + 5 * SECOND)
    assert states["init"]["FinishedAt"] == task_state.rfc3339(T0_NS + 2 * SECOND)
    assert states["main"]["FinishedAt"] == task_state.ZERO_TIME
    for path in ["/v1/allocations", "/v1/job/web/allocations", f"/v1/node/{node_id}/allocations"]:
        assert_decodes(get(client, path), "[]*AllocationListStub", path)


@pytest.mark.parametrize(
    ("key", "value"), [("StartedAt", T0_NS), ("FinishedAt", "yesterday"), ("LastRestart", None), ("Restarts", -1)]
)
def test_a_task_state_of_the_wrong_type_is_refused_naming_it(
    client: FlaskClient, pg: Conn, key: str, value: Any
) -> None:
    node_id, secret = node_with_secret(client)
    alloc_id = insert_allocation(pg, node_id, register(client, minimal_job("web"))["EvalID"])
    states = reported_states()
    states["main"][key] = value
    reply = report(client, node_id, secret, alloc_id, states)
    assert reply.status_code == 400 and reply.json is not None
    assert reply.json["errors"][0]["field"] == f"Allocs[0].TaskStates.main.{key}", reply.json


def test_a_partial_task_state_is_stored_with_nomads_zero_values(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = node_with_secret(client)
    alloc_id = insert_allocation(pg, node_id, register(client, minimal_job("web"))["EvalID"])
    assert report(client, node_id, secret, alloc_id, {"t": {"State": "running"}}).status_code == 200
    state = get(client, f"/v1/allocation/{alloc_id}")["TaskStates"]["t"]
    assert_decodes(state, "TaskState", "TaskState")
    assert state["StartedAt"] == state["LastRestart"] == state["FinishedAt"] == task_state.ZERO_TIME


def test_node_after_a_drain_decodes(client: FlaskClient) -> None:
    node_id, _ = node_with_secret(client)
    # The body Nomad's API client sends (api.NodeUpdateDrainRequest): Meta is null when unset.
    body = {"NodeID": node_id, "DrainSpec": {"Deadline": 3600 * SECOND, "IgnoreSystemJobs": True}}
    reply = client.put(f"/v1/node/{node_id}/drain", json={**body, "MarkEligible": False, "Meta": None})
    assert reply.status_code == 200, reply.json
    node = get(client, f"/v1/node/{node_id}")
    assert_decodes(node, "Node", "Node")
    drain = node["DrainStrategy"]
    assert set(drain) == {"Deadline", "IgnoreSystemJobs", "ForceDeadline", "StartedAt"}  # flat, as Nomad's
    assert drain["Deadline"] == 3600 * SECOND and drain["IgnoreSystemJobs"] is True
    assert RFC3339.match(drain["ForceDeadline"]) and drain["ForceDeadline"] > drain["StartedAt"]
    assert node["LastDrain"]["Status"] == "draining" and node["LastDrain"]["Meta"] == {}
    assert node["HTTPAddr"] == ""  # Nomad's API clients then ask the servers (docs/security.md)
    assert_decodes(get(client, "/v1/nodes"), "[]*NodeListStub", "Nodes")
    cancel = {"NodeID": node_id, "DrainSpec": None, "MarkEligible": True, "Meta": {"reason": "done"}}
    assert client.put(f"/v1/node/{node_id}/drain", json=cancel).status_code == 200
    node = get(client, f"/v1/node/{node_id}")
    assert_decodes(node, "Node", "Node")
    assert node["DrainStrategy"] is None and node["LastDrain"]["Status"] == "canceled"
    assert node["LastDrain"]["UpdatedAt"] >= node["LastDrain"]["StartedAt"]


def test_no_deadline_and_forced_drains_decode(client: FlaskClient) -> None:
    node_id, _ = node_with_secret(client)
    client.put(f"/v1/node/{node_id}/drain", json={"DrainSpec": {"Deadline": 0}, "Meta": None})
    drain = get(client, f"/v1/node/{node_id}")["DrainStrategy"]
    assert drain["ForceDeadline"] == task_state.ZERO_TIME and drain["Deadline"] == 0
    client.put(f"/v1/node/{node_id}/drain", json={"DrainSpec": {"Deadline": -1}})
    forced = get(client, f"/v1/node/{node_id}")
    assert_decodes(forced, "Node", "Node")
    assert forced["DrainStrategy"]["StartedAt"] == drain["StartedAt"]  # an update keeps the start


def test_evaluations_and_deployment_decode(client: FlaskClient, pg: Conn) -> None:
    eval_id = register(client, minimal_job("web"))["EvalID"]
    assert_decodes(get(client, f"/v1/evaluation/{eval_id}?related=true"), "Evaluation", "Evaluation")
    assert_decodes(get(client, "/v1/evaluations"), "[]*Evaluation", "Evaluations")
    deployment_id = insert_deployment(pg)
    assert_decodes(get(client, f"/v1/deployment/{deployment_id}"), "Deployment", "Deployment")
    assert_decodes(get(client, "/v1/deployments"), "[]*Deployment", "Deployments")


def test_agent_self_decodes_with_stats_as_string_maps(client: FlaskClient) -> None:
    me = get(client, "/v1/agent/self")
    assert_decodes(me, "AgentSelf", "AgentSelf")
    assert me["stats"]["nomad"]["leader"] == "true" and int(me["stats"]["nomad"]["state_index"]) > 0


def test_event_stream_frames_decode(client: FlaskClient, pg: Conn) -> None:
    node_id, secret = node_with_secret(client)
    eval_id = register(client, minimal_job("web"))["EvalID"]
    alloc_id = insert_allocation(pg, node_id, eval_id)
    assert report(client, node_id, secret, alloc_id, reported_states()).status_code == 200
    client.put(f"/v1/node/{node_id}/drain", json={"DrainSpec": {"Deadline": SECOND}, "Meta": None})
    frames = read_frames(client, "topic=*", until=has("Node", "NodeDrain"))
    for f, frame in enumerate(frames):
        assert_decodes(frame, "Events", f"frame[{f}]")
    topics = set()
    for e, event in enumerate(events(frames)):
        for key, struct in PAYLOADS.items():
            if key in event["Payload"]:
                topics.add(key)
                assert_decodes(event["Payload"][key], struct, f"event[{e}].Payload.{key}")
    assert {"Job", "Allocation", "Node", "Evaluation"} <= topics
