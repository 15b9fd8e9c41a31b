"""Nomad's Raft, autopilot, snapshot and gossip routes: the Raft configuration answered from the
database's members, the rest a 501 naming what to use instead (never a 404), and the summary
reconcile a no-op success because corral computes job summaries on read."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient

pytestmark = pytest.mark.integration

REPLACED = [
    ("delete", "/v1/operator/raft/peer?address=10.0.0.1:4647", "Raft", "promote a standby"),
    ("put", "/v1/operator/raft/transfer-leadership", "Raft", "advisory locks"),
    ("get", "/v1/operator/autopilot/configuration", "Autopilot", "/v1/agent/health"),
    ("put", "/v1/operator/autopilot/configuration", "Autopilot", "/v1/agent/health"),
    ("get", "/v1/operator/autopilot/health", "Autopilot", "replication state"),
    ("get", "/v1/operator/snapshot", "Snapshot", "pg_dump"),
    ("put", "/v1/operator/snapshot", "Snapshot", "pg_restore"),
    ("put", "/v1/agent/join?address=10.0.0.2", "Gossip", "do not gossip"),
    ("put", "/v1/agent/force-leave?node=a", "Gossip", "do not gossip"),
    ("get", "/v1/agent/keyring/list", "Gossip", "gossip key"),
    ("put", "/v1/agent/servers?address=10.0.0.3:4647", "Servers", "corral client --server"),
]


def test_the_raft_configuration_is_the_databases_primary_as_leader(client: FlaskClient) -> None:
    resp = client.get("/v1/operator/raft/configuration")
    assert resp.status_code == 200, resp.json
    body = resp.json
    assert isinstance(body, dict) and set(body) == {"Servers", "Index"}
    servers = body["Servers"]
    assert len(servers) >= 1
    primary = servers[0]
    assert set(primary) == {"ID", "Node", "Address", "Leader", "Voter", "RaftProtocol"}
    assert primary["Leader"] is True and primary["Voter"] is True and primary["Node"] == "postgres-primary"
    assert primary["Address"].rpartition(":")[2].isdigit()
    assert all(s["Leader"] is False for s in servers[1:])  # standbys, if the test database has any


@pytest.mark.parametrize(("method", "path", "field", "names"), REPLACED, ids=[f"{m} {p}" for m, p, _, _ in REPLACED])
def test_routes_with_no_meaning_answer_501_naming_the_replacement(
    client: FlaskClient, method: str, path: str, field: str, names: str
) -> None:
    resp = getattr(client, method)(path, headers={"Content-Type": "application/json"}, data="{}")
    assert resp.status_code == 501, (path, resp.status_code, resp.data[:200])
    problems = resp.json["errors"]
    assert [p["field"] for p in problems] == [field]
    assert names in problems[0]["message"]


def test_the_agent_servers_are_this_server(client: FlaskClient) -> None:
    resp = client.get("/v1/agent/servers")
    assert resp.status_code == 200
    peers = client.get("/v1/status/peers").json
    assert isinstance(peers, list) and resp.json == peers[:1]


def test_reconciling_summaries_succeeds_with_nothing_to_rebuild(client: FlaskClient) -> None:
    resp = client.put("/v1/system/reconcile/summaries")
    assert resp.status_code == 200
    assert resp.json is None
