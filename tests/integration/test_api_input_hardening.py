"""Bad input is a 4xx naming the field, never a 500 (invariant 7); Nomad's Go client works as sent."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.store import scheduler_config
from tests.support.api import json_body, minimal_job, node_body

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def fields_of(resp: Any) -> list[str]:
    return [e["field"] for e in resp.json["errors"]]


def raw_put(client: FlaskClient, url: str, body: str, **headers: str) -> Any:
    """A request as Nomad's Go client sends it: a JSON body and no Content-Type header."""
    return client.open(url, method="PUT", data=body.encode(), headers=headers)


# --- 1. JSON, or no Content-Type ----------------------------------------------------------


def test_register_without_content_type_header(client: FlaskClient, pg: Conn) -> None:
    resp = raw_put(client, "/v1/jobs", json.dumps({"Job": minimal_job()}))
    assert resp.status_code == 200, resp.json
    assert pg.execute("SELECT id FROM jobs").fetchall() == [("web",)]


def test_register_with_a_foreign_content_type_is_refused(client: FlaskClient, pg: Conn) -> None:
    # text/plain is what a web page may send cross-origin without asking (app/api/http/crosssite.py).
    resp = raw_put(client, "/v1/jobs", json.dumps({"Job": minimal_job()}), **{"Content-Type": "text/plain"})
    assert resp.status_code == 415 and fields_of(resp) == ["Content-Type"]
    assert pg.execute("SELECT id FROM jobs").fetchall() == []


def test_invalid_json_without_content_type_names_body(client: FlaskClient) -> None:
    resp = raw_put(client, "/v1/jobs", '{"Job": ')
    assert resp.status_code == 400
    assert fields_of(resp) == ["body"]


# --- 2. PUT where Nomad's Go api package uses PUT ------------------------------------------


def test_eligibility_accepts_put_and_post(client: FlaskClient) -> None:
    node_id = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    put = raw_put(client, f"/v1/node/{node_id}/eligibility", json.dumps({"Eligibility": "ineligible"}))
    assert put.status_code == 200, put.json
    post = client.post(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "eligible"})
    assert post.status_code == 200, post.json
    assert json_body(client.get(f"/v1/node/{node_id}"))["SchedulingEligibility"] == "eligible"


def test_jobs_parse_accepts_put(client: FlaskClient) -> None:
    resp = raw_put(client, "/v1/jobs/parse", json.dumps({"JobHCL": 'job "x" {\n}\n'}))
    assert resp.status_code == 200, resp.json
    assert resp.json["ID"] == "x"


# --- 3. counts and amounts that overflow the database's integers ---------------------------


def test_huge_count_is_400_and_writes_nothing(client: FlaskClient, pg: Conn) -> None:
    job = minimal_job()
    job["TaskGroups"][0]["Count"] = 3_000_000_000
    resp = client.put("/v1/jobs", json={"Job": job})
    assert resp.status_code == 400
    assert fields_of(resp) == ["Job.TaskGroups[0].Count"]
    assert pg.execute("SELECT count(*) FROM jobs").fetchone() == (0,)


@pytest.mark.parametrize("key", ["CPU", "MemoryMB", "MemoryMaxMB", "Cores", "DiskMB"])
def test_task_resources_beyond_int32_are_400(client: FlaskClient, key: str) -> None:
    job = minimal_job()
    job["TaskGroups"][0]["Tasks"][0]["Resources"] = {key: 2**31}
    resp = client.put("/v1/jobs", json={"Job": job})
    assert resp.status_code == 400
    assert f"Job.TaskGroups[0].Tasks[0].Resources.{key}" in fields_of(resp)


def test_job_summary_view_survives_a_count_beyond_int32(client: FlaskClient, pg: Conn) -> None:
    """Rows written before the limit existed must not break the list endpoint or the view."""
    assert client.put("/v1/jobs", json={"Job": minimal_job()}).status_code == 200
    pg.execute("""UPDATE jobs SET spec = jsonb_set(spec, '{TaskGroups,0,Count}', '3000000000')""")
    assert pg.execute("SELECT desired FROM v_job_summary").fetchall() == [(3_000_000_000,)]
    assert client.get("/v1/jobs").status_code == 200


# --- 4. NUL, NaN, nesting, oversized numbers, database backstops -------------------------


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda j: j.update(Meta={"k": "a\x00b"}), "Job.Meta.k"),
        (lambda j: j.update(Meta={"a\x00b": "v"}), "Job.Meta"),
        (lambda j: j["TaskGroups"][0].update(Name="g\x00"), "Job.TaskGroups[0].Name"),
        (lambda j: j["TaskGroups"][0]["Tasks"][0].update(Env={"X": "\x00"}), "Job.TaskGroups[0].Tasks[0].Env.X"),
    ],
)
def test_nul_characters_in_the_body_are_400_naming_the_path(
    client: FlaskClient, pg: Conn, mutate: Callable[[dict[str, Any]], None], field: str
) -> None:
    job = minimal_job()
    mutate(job)
    resp = client.put("/v1/jobs", json={"Job": job})
    assert resp.status_code == 400, resp.json
    assert fields_of(resp) == [field]
    assert pg.execute("SELECT count(*) FROM jobs").fetchone() == (0,)


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_non_finite_numbers_are_400_naming_the_path(client: FlaskClient, constant: str) -> None:
    body = json.dumps({"Job": minimal_job()}).replace('"Count": 2', f'"Count": {constant}')
    resp = raw_put(client, "/v1/jobs", body)
    assert resp.status_code == 400, resp.json
    assert fields_of(resp) == ["Job.TaskGroups[0].Count"]


def test_deeply_nested_body_is_400(client: FlaskClient) -> None:
    for depth in (200, 100_000):
        resp = raw_put(client, "/v1/jobs", "[" * depth + "]" * depth)
        assert resp.status_code == 400, depth
        resp = raw_put(client, "/v1/jobs", '{"Job": ' + '{"a": ' * depth + "1" + "}" * depth + "}")
        assert resp.status_code == 400, depth
        assert "nested too deeply" in resp.json["detail"]


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/v1/jobs?prefix=a%00b", "prefix"),
        ("/v1/jobs?namespace=a%00b", "namespace"),
        ("/v1/evaluations?job=a%00b", "job"),
        ("/v1/evaluations?status=a%00", "status"),
        ("/v1/allocations?prefix=%00", "prefix"),
        ("/v1/nodes?prefix=%00", "prefix"),
        ("/v1/job/a%00b", "JobID"),
        ("/v1/job/a%00b/summary", "JobID"),
        ("/v1/node/a%00b", "NodeID"),
    ],
)
def test_nul_in_query_and_path_is_400(client: FlaskClient, url: str, field: str) -> None:
    resp = client.get(url)
    assert resp.status_code == 400, resp.json
    assert fields_of(resp) == [field]


def test_nul_in_a_delete_path_is_400(client: FlaskClient) -> None:
    resp = client.delete("/v1/job/a%00b")
    assert resp.status_code == 400
    assert fields_of(resp) == ["JobID"]


@pytest.mark.parametrize(
    "key",
    [
        ("NodeResources", "Cpu", "CpuShares"),
        ("NodeResources", "Memory", "MemoryMB"),
        ("NodeResources", "Disk", "DiskMB"),
        ("ReservedResources", "Cpu", "CpuShares"),
        ("ReservedResources", "Memory", "MemoryMB"),
        ("ReservedResources", "Disk", "DiskMB"),
    ],
)
def test_node_amounts_beyond_int32_are_400(client: FlaskClient, pg: Conn, key: tuple[str, str, str]) -> None:
    body = node_body(str(uuid.uuid4()))
    top, mid, leaf = key
    body.setdefault(top, {})[mid] = {leaf: 2**31}
    resp = client.put("/v1/node/register", json={"Node": body})
    assert resp.status_code == 400, resp.json
    assert fields_of(resp) == [f"Node.{top}.{mid}.{leaf}"]
    assert pg.execute("SELECT count(*) FROM nodes").fetchone() == (0,)


@pytest.mark.parametrize("ports", ["abc", "80-", "90-80", "70000", "-5", "1,,x"])
def test_bad_reserved_host_ports_are_400(client: FlaskClient, ports: str) -> None:
    body = node_body(str(uuid.uuid4()), ReservedResources={"Networks": {"ReservedHostPorts": ports}})
    resp = client.put("/v1/node/register", json={"Node": body})
    assert resp.status_code == 400, resp.json
    assert fields_of(resp) == ["Node.ReservedResources.Networks.ReservedHostPorts"]


@pytest.mark.parametrize(
    ("query", "field"),
    [
        (f"per_page={2**63}", "per_page"),
        (f"per_page={2**31}", "per_page"),
        (f"next_token={2**63}.{uuid.UUID(int=0)}", "next_token"),
        (f"next_token=-1.{uuid.UUID(int=0)}", "next_token"),
        (f"index={2**63}", "index"),
    ],
)
def test_integers_beyond_bigint_in_the_query_are_400(client: FlaskClient, query: str, field: str) -> None:
    resp = client.get(f"/v1/evaluations?{query}")
    assert resp.status_code == 400, resp.json
    assert fields_of(resp) == [field]


def _patch_update_config(monkeypatch: pytest.MonkeyPatch, before: str) -> None:
    original = scheduler_config.update_config

    def update_config(session: Session, update: scheduler_config.SchedulerConfigUpdate, cas: int | None) -> Any:
        session.execute(text(before))
        return original(session, update, cas)

    monkeypatch.setattr(scheduler_config, "update_config", update_config)


def test_database_data_error_is_400_not_500(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_update_config(monkeypatch, "SELECT 'not a number'::int")
    resp = client.put("/v1/operator/scheduler/configuration", json={})
    assert resp.status_code == 400
    assert resp.content_type == "application/problem+json"
    assert "invalid input" in json_body(resp)["detail"]


def test_lock_timeout_is_503_with_retry_after(client: FlaskClient, pg: Conn, monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_update_config(monkeypatch, "SET LOCAL lock_timeout = '50ms'")
    with pg.transaction():
        pg.execute("SELECT * FROM scheduler_config FOR UPDATE")
        resp = client.put("/v1/operator/scheduler/configuration", json={})
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "1"
    assert resp.content_type == "application/problem+json"
    assert json_body(resp)["status"] == 503


def test_statement_timeout_is_503_with_retry_after(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    _patch_update_config(monkeypatch, "SET LOCAL statement_timeout = '20ms'; SELECT pg_sleep(1)")
    resp = client.put("/v1/operator/scheduler/configuration", json={})
    assert resp.status_code == 503
    assert resp.headers["Retry-After"] == "1"


# --- 6. the whole NodeResources object is kept ---------------------------------------------

FULL_RESOURCES = {
    "Cpu": {"CpuShares": 4000, "TotalCpuCores": 4, "ReservableCpuCores": [0, 1, 2, 3]},
    "Memory": {"MemoryMB": 8192},
    "Disk": {"DiskMB": 50000},
    "Devices": [{"Vendor": "nvidia", "Type": "gpu", "Name": "t4", "Instances": [{"ID": "GPU-1", "Healthy": True}]}],
    "HostVolumes": {"data": {"Path": "/srv/data", "ReadOnly": False}},
    "HostNetworks": {"public": {"Name": "public", "CIDR": "10.0.0.0/8"}},
    "MinDynamicPort": 20000,
    "MaxDynamicPort": 32000,
}


def test_node_resources_are_stored_whole_and_returned(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    reserved = {"Cpu": {"CpuShares": 100, "ReservedCpuCores": [0]}, "Memory": {"MemoryMB": 256}}
    body = node_body(node_id, NodeResources=FULL_RESOURCES, ReservedResources=reserved)
    assert client.put("/v1/node/register", json={"Node": body}).status_code == 200
    stored = pg.execute("SELECT node_resources, reserved_resources, cpu_shares FROM nodes").fetchone()
    assert stored == (FULL_RESOURCES, reserved, 4000)
    node = client.get(f"/v1/node/{node_id}").json
    assert node is not None
    assert node["NodeResources"] == FULL_RESOURCES
    assert node["ReservedResources"]["Cpu"] == {"CpuShares": 100, "ReservedCpuCores": [0]}
    assert node["ReservedResources"]["Networks"] == {"ReservedHostPorts": ""}


@pytest.mark.parametrize("key", ["HostVolumes", "Devices", "HostNetworks"])
def test_host_volume_and_device_changes_create_node_update_evals(client: FlaskClient, pg: Conn, key: str) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job("sys", Type="system")})
    node_id = str(uuid.uuid4())
    first = client.put("/v1/node/register", json={"Node": node_body(node_id, NodeResources=FULL_RESOURCES)}).json
    assert first is not None and len(first["EvalIDs"]) == 1
    secret = first["SecretID"]
    same = client.put(
        "/v1/node/register", json={"Node": node_body(node_id, SecretID=secret, NodeResources=FULL_RESOURCES)}
    ).json
    assert same is not None and same["EvalIDs"] == []
    changed = {**FULL_RESOURCES, key: {} if isinstance(FULL_RESOURCES[key], dict) else []}
    again = client.put(
        "/v1/node/register", json={"Node": node_body(node_id, SecretID=secret, NodeResources=changed)}
    ).json
    assert again is not None and len(again["EvalIDs"]) == 1
