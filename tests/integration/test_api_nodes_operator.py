"""Node registration and eligibility, scheduler configuration with check-and-set, agent endpoints."""

from __future__ import annotations

import uuid
from datetime import datetime

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import create_engine, make_url

from app import create_app
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, node_body

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def test_register_node_returns_secret_and_heartbeat(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    resp = client.put("/v1/node/register", json={"Node": node_body(node_id)})
    assert resp.status_code == 200, resp.json
    body = resp.json
    assert body is not None and body["NodeID"] == node_id and body["SecretID"]
    assert body["HeartbeatTTL"] >= 10_000_000_000
    node = client.get(f"/v1/node/{node_id}").json
    assert node is not None
    assert node["Status"] == "ready" and node["SecretID"] == "" and node["ComputedClass"].startswith("v1:")
    assert node["NodeResources"]["Cpu"]["CpuShares"] == 4000
    assert pg.execute("SELECT count(*) FROM node_heartbeats").fetchone() == (1,)
    usage = pg.execute("SELECT cpu_capacity, memory_mb_capacity, live_allocs FROM v_node_usage").fetchall()
    assert usage == [(3900, 7936, 0)]


def test_reregister_needs_the_secret(client: FlaskClient) -> None:
    node_id = str(uuid.uuid4())
    secret = json_body(client.put("/v1/node/register", json={"Node": node_body(node_id)}))["SecretID"]
    stolen = client.put("/v1/node/register", json={"Node": node_body(node_id, SecretID="guess")})
    assert stolen.status_code == 403
    assert json_body(stolen)["errors"][0]["field"] == "Node.SecretID"
    again = client.put("/v1/node/register", json={"Node": node_body(node_id, SecretID=secret, Name="renamed")})
    assert again.status_code == 200
    assert json_body(client.get(f"/v1/node/{node_id}"))["Name"] == "renamed"


@pytest.mark.parametrize(
    ("was", "becomes"), [("ready", "ready"), ("down", "initializing"), ("disconnected", "initializing")]
)
def test_a_ready_registration_updates_a_live_node_but_not_a_lost_one(
    client: FlaskClient, pg: Conn, was: str, becomes: str
) -> None:
    """A live node's update (new metadata) stays ready; a node that was down or disconnected comes
    back through initializing, whatever its registration says, until its client has re-sent its
    allocations' state and said so in a heartbeat."""
    node_id = str(uuid.uuid4())
    secret = json_body(client.put("/v1/node/register", json={"Node": node_body(node_id)}))["SecretID"]
    pg.execute("UPDATE nodes SET status = %s WHERE id = %s", (was, node_id))
    again = client.put("/v1/node/register", json={"Node": node_body(node_id, SecretID=secret, Meta={"rack": "r1"})})
    assert again.status_code == 200, again.json
    node = json_body(client.get(f"/v1/node/{node_id}"))
    assert (node["Status"], node["Meta"]) == (becomes, {"rack": "r1"})


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"ID": "nope"}, "Node.ID"),
        ({"Name": ""}, "Node.Name"),
        ({"NodePool": "all"}, "Node.NodePool"),
        ({"Status": "down"}, "Node.Status"),
        ({"NodeResources": {"Cpu": {"CpuShares": -1}, "Memory": {"MemoryMB": 1}}}, "Node.NodeResources.Cpu.CpuShares"),
        (
            {"NodeResources": {"Cpu": {"CpuShares": "lots"}, "Memory": {"MemoryMB": 1}}},
            "Node.NodeResources.Cpu.CpuShares",
        ),
        ({"NodeResources": {"Cpu": {"CpuShares": 1}}}, "Node.NodeResources.Memory"),
    ],
)
def test_bad_node_registration_is_400(client: FlaskClient, pg: Conn, change: dict[str, object], field: str) -> None:
    resp = client.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()), **change)})
    assert resp.status_code == 400, resp.json
    assert field in [e["field"] for e in json_body(resp)["errors"]]
    assert pg.execute("SELECT count(*) FROM nodes").fetchone() == (0,)


def test_new_ready_node_gets_an_eval_per_matching_system_job(client: FlaskClient, pg: Conn) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job("sys", Type="system", Datacenters=["dc*"])})
    client.put("/v1/jobs", json={"Job": minimal_job("other-dc", Type="system", Datacenters=["eu-*"])})
    client.put("/v1/jobs", json={"Job": minimal_job("svc")})
    body = client.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()))}).json
    assert body is not None and len(body["EvalIDs"]) == 1
    evaluation = client.get(f"/v1/evaluation/{body['EvalIDs'][0]}").json
    assert evaluation is not None
    assert (evaluation["JobID"], evaluation["TriggeredBy"], evaluation["NodeID"]) == (
        "sys",
        "node-update",
        body["NodeID"],
    )


def test_eligibility_toggle_creates_evals_only_when_becoming_eligible(client: FlaskClient, pg: Conn) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job("sys", Type="system")})
    node_id = json_body(client.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()))}))["NodeID"]
    off = client.post(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "ineligible"}).json
    assert off is not None and off["EvalIDs"] == []
    assert json_body(client.get(f"/v1/node/{node_id}"))["SchedulingEligibility"] == "ineligible"
    on = client.post(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "eligible"}).json
    assert on is not None and len(on["EvalIDs"]) == 1
    bad = client.post(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "sometimes"})
    assert bad.status_code == 400 and json_body(bad)["errors"][0]["field"] == "Eligibility"
    pg.execute("UPDATE nodes SET drain_strategy = '{}'::jsonb WHERE id = %s", (node_id,))
    draining = client.post(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "eligible"})
    assert draining.status_code == 400
    assert client.post(f"/v1/node/{uuid.uuid4()}/eligibility", json={"Eligibility": "eligible"}).status_code == 404


def test_node_list_and_prefix(client: FlaskClient) -> None:
    ids = sorted(str(uuid.uuid4()) for _ in range(3))
    for node_id in ids:
        client.put("/v1/node/register", json={"Node": node_body(node_id)})
    assert len(json_body(client.get("/v1/nodes"))) == 3
    assert [n["ID"] for n in json_body(client.get(f"/v1/nodes?prefix={ids[1][:13]}"))] == [ids[1]]


def test_node_list_resources_and_last_heartbeat(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    client.put("/v1/node/register", json={"Node": node_body(node_id)})
    (stub,) = json_body(client.get("/v1/nodes"))
    assert "NodeResources" not in stub
    (full,) = json_body(client.get("/v1/nodes?resources=true"))
    assert full["NodeResources"]["Cpu"]["CpuShares"] == 4000 and full["ReservedResources"]["Memory"]["MemoryMB"] == 256
    assert client.get("/v1/nodes?resources=maybe").status_code == 400
    seen = pg.execute("SELECT last_seen_at FROM node_heartbeats").fetchone()
    assert seen is not None and isinstance(seen[0], datetime)
    heartbeat = json_body(client.get(f"/v1/node/{node_id}"))["LastHeartbeat"]
    assert heartbeat == int(seen[0].timestamp() * 1_000_000) * 1000
    pg.execute("DELETE FROM node_heartbeats")
    assert json_body(client.get(f"/v1/node/{node_id}"))["LastHeartbeat"] == 0


def test_scheduler_configuration_defaults_and_cas(client: FlaskClient) -> None:
    got = client.get("/v1/operator/scheduler/configuration").json
    assert got is not None
    config = got["SchedulerConfig"]
    assert config["SchedulerAlgorithm"] == "binpack"
    assert config["PreemptionConfig"] == {
        "SystemSchedulerEnabled": True,
        "SysBatchSchedulerEnabled": False,
        "BatchSchedulerEnabled": False,
        "ServiceSchedulerEnabled": False,
    }
    new = {"SchedulerAlgorithm": "spread", "PauseEvalBroker": True}
    stale = client.put(f"/v1/operator/scheduler/configuration?cas={config['ModifyIndex'] + 5}", json=new).json
    assert stale is not None and stale["Updated"] is False
    fresh = client.put(f"/v1/operator/scheduler/configuration?cas={config['ModifyIndex']}", json=new).json
    assert fresh is not None and fresh["Updated"] is True
    after = json_body(client.get("/v1/operator/scheduler/configuration"))["SchedulerConfig"]
    assert after["SchedulerAlgorithm"] == "spread" and after["PauseEvalBroker"] is True
    assert after["ModifyIndex"] > config["ModifyIndex"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"SchedulerAlgorithm": "random"}, "SchedulerConfig.SchedulerAlgorithm"),
        ({"PauseEvalBroker": "yes"}, "SchedulerConfig.PauseEvalBroker"),
        (
            {"PreemptionConfig": {"SystemSchedulerEnabled": 1}},
            "SchedulerConfig.PreemptionConfig.SystemSchedulerEnabled",
        ),
    ],
)
def test_bad_scheduler_configuration_is_400(client: FlaskClient, body: dict[str, object], field: str) -> None:
    resp = client.put("/v1/operator/scheduler/configuration", json=body)
    assert resp.status_code == 400
    assert json_body(resp)["errors"][0]["field"] == field


def test_agent_health_and_self(client: FlaskClient) -> None:
    health = client.get("/v1/agent/health")
    assert health.status_code == 200 and health.json == {"server": {"ok": True, "message": "ok"}}
    me = client.get("/v1/agent/self").json
    assert me is not None
    database = me["config"]["Database"]
    assert database["SchemaRevision"] == database["SchemaHead"]
    assert database["Embedded"] is False  # an external database_url, and not the agent's


def test_agent_health_of_the_client_on_this_host(client: FlaskClient) -> None:
    """`?type=client` answers for the ready client advertising an address of this host (Nomad's
    agent answers for its own client); without one, Nomad's "client not enabled" and a 500."""
    assert client.get("/v1/agent/health").json == {"server": {"ok": True, "message": "ok"}}
    none = client.get("/v1/agent/health?type=client")
    assert none.status_code == 500 and none.json is not None
    assert none.json["client"]["ok"] is False and none.json["client"]["message"].startswith("client not enabled")
    assert "server" not in none.json
    elsewhere = node_body(str(uuid.uuid4()), HTTPAddr="192.0.2.7:4646", Status="ready")  # TEST-NET
    assert client.put("/v1/node/register", json={"Node": elsewhere}).status_code == 200
    assert client.get("/v1/agent/health?type=client").status_code == 500
    local = node_body(str(uuid.uuid4()), HTTPAddr="127.0.0.1:4647", Status="ready")
    assert client.put("/v1/node/register", json={"Node": local}).status_code == 200
    both = client.get("/v1/agent/health?type=client&type=server")
    assert both.status_code == 200
    assert both.json == {"client": {"ok": True, "message": "ok"}, "server": {"ok": True, "message": "ok"}}
    # Without type, every part the "agent" runs: the server, and now the client on its host
    # (whose presence each process looks up at most every few seconds).
    client.application.extensions.pop("corral.local_client_seen", None)
    assert client.get("/v1/agent/health").json == both.json
    bogus = client.get("/v1/agent/health?type=raft")
    assert bogus.status_code == 400 and json_body(bogus)["errors"][0]["field"] == "type"


def test_agent_self_reports_the_agents_embedded_database(database_url: str) -> None:
    app = create_app(Settings(database_url=database_url, database_embedded=True), database_url)
    try:
        me = app.test_client().get("/v1/agent/self").json
        assert me is not None and me["config"]["Database"]["Embedded"] is True
    finally:
        app.extensions["corral"].close()


def test_agent_health_reports_the_index_and_an_unreachable_database(
    client: FlaskClient, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    client.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()))})  # the index moves
    me = client.get("/v1/agent/self").json
    assert me is not None and int(me["stats"]["nomad"]["state_index"]) > 0
    assert client.get("/v1/agent/health").headers["X-Nomad-Index"] == me["stats"]["nomad"]["state_index"]
    app = create_app(Settings(database_url=database_url), database_url)
    try:
        state = app.extensions["corral"]
        state.client_engine.dispose()
        unreachable = make_url(str(state.client_engine.url)).set(host="127.0.0.1", port=1)
        monkeypatch.setattr(state, "client_engine", create_engine(unreachable, connect_args={"connect_timeout": 2}))
        down = app.test_client().get("/v1/agent/health")
        assert down.status_code == 500
        assert down.json is not None and down.json["server"]["ok"] is False
        assert down.json["server"]["message"].startswith("database unreachable")
    finally:
        app.extensions["corral"].close()
