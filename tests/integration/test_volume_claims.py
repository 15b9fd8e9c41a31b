"""Sticky host volume claims end to end below the HTTP API: a sticky group's first placement,
scheduled from a real snapshot and committed by the applier, claims its volume; the next
snapshot carries the claim; the claim list filters as Nomad's; the claimed volume is not
deleted until its claim is; purging the job deletes its claims; bad input and missing
permissions are 4xx answers that name the field or the capability."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine

from app import create_app
from app.db.leadership import Leadership
from app.pipeline import broker, plans
from app.pipeline.snapshot import SnapshotLoader
from app.scheduler import process
from app.settings.config import Settings
from app.structs import Evaluation
from tests.support.api import json_body, node_body, register
from tests.support.pipeline import apply, claim, submit

pytestmark = pytest.mark.integration
NOW = 1_700_000_000 * 10**9
DRIVERS = {"mock": {"Detected": True, "Healthy": True}}


def _ready_volume(client: FlaskClient, name: str = "data", headers: dict[str, str] | None = None) -> str:
    """A node holding a ready dynamic host volume `name`; the volume's ID."""
    node_id, secret = str(uuid.uuid4()), str(uuid.uuid4())
    body = node_body(node_id, SecretID=secret, Status="ready", Drivers=DRIVERS)
    assert client.put("/v1/node/register", json={"Node": body}, headers=headers).status_code == 200
    made = client.put("/v1/volume/host/create", json={"Volume": {"Name": name, "NodeID": node_id}}, headers=headers)
    assert made.status_code == 200, made.get_data(as_text=True)
    volume_id = str(json_body(made)["Volume"]["ID"])
    reported = {name: {"Name": name, "Path": f"/srv/{volume_id}", "ID": volume_id}}
    body = node_body(node_id, SecretID=secret, Status="ready", Drivers=DRIVERS, HostVolumes=reported)
    assert client.put("/v1/node/register", json={"Node": body}, headers=headers).status_code == 200
    return volume_id


def _sticky_job(job_id: str = "db", **volume: Any) -> dict[str, Any]:
    return {
        "ID": job_id,
        "TaskGroups": [
            {
                "Name": "g",
                "Count": 1,
                "Volumes": {"v": {"Name": "v", "Type": "host", "Source": "data", "Sticky": True, **volume}},
                "Tasks": [{"Name": "t", "Driver": "mock"}],
            }
        ],
    }


def _schedule(engine: Engine, term: tuple[Leadership, int]) -> None:
    """One evaluation scheduled from a real snapshot and its plan applied."""
    held = claim(engine)
    assert held is not None
    snap = SnapshotLoader(engine).load(held.evaluation)
    result = process(held.evaluation, snap, now_ns=NOW)
    assert not result.failed_tg_allocs, result.failed_tg_allocs
    plan_id = submit(engine, held, result.plan)
    assert apply(*term) == plan_id
    applied = plans.result(engine, plan_id)
    assert applied is not None and applied.placed == 1
    broker.complete_success(engine, held, broker.Outcome(snapshot_index=snap.index))


def test_a_sticky_placement_claims_its_volume_until_the_claim_is_deleted(
    client: FlaskClient, engine: Engine, term: tuple[Leadership, int]
) -> None:
    volume_id = _ready_volume(client)
    register(client, _sticky_job())
    _schedule(engine, term)
    listed = client.get("/v1/volumes/claims")
    assert listed.status_code == 200 and int(listed.headers["X-Nomad-Index"]) > 0
    (claimed,) = json_body(listed)
    (alloc,) = json_body(client.get("/v1/job/db/allocations"))
    assert {k: claimed[k] for k in ("Namespace", "JobID", "TaskGroupName", "AllocID", "VolumeID", "VolumeName")} == {
        "Namespace": "default",
        "JobID": "db",
        "TaskGroupName": "g",
        "AllocID": alloc["ID"],
        "VolumeID": volume_id,
        "VolumeName": "data",
    }
    assert claimed["CreateIndex"] == claimed["ModifyIndex"] > 0

    assert claim(engine) is None  # nothing pending: read the job's snapshot as its next pass would
    next_pass = Evaluation(uuid.uuid4(), "default", "db", "service", 50, "job-register", 1)
    (stored,) = SnapshotLoader(engine).load(next_pass).volume_claims
    assert (str(stored.volume_id), str(stored.alloc_id), stored.task_group) == (volume_id, alloc["ID"], "g")

    for query, expected in [
        ("job_id=db", 1),
        ("job_id=other", 0),
        ("task_group=g", 1),
        ("task_group=h", 0),
        ("volume_name=data", 1),
        ("volume_name=else", 0),
        (f"prefix={claimed['ID'][:8]}", 1),
        ("namespace=*", 1),
        ("namespace=prod", 0),
    ]:
        assert len(json_body(client.get(f"/v1/volumes/claims?{query}"))) == expected, query

    with engine.begin() as conn:  # the allocation is done: only the claim holds the volume now
        conn.exec_driver_sql("UPDATE allocations SET client_status = 'complete'")
    refused = client.delete(f"/v1/volume/host/{volume_id}")
    assert refused.status_code == 400 and claimed["ID"] in refused.get_data(as_text=True)
    elsewhere = client.delete(f"/v1/volumes/claim/{claimed['ID']}?namespace=prod")
    assert elsewhere.status_code == 404 and "ClaimID" in elsewhere.get_data(as_text=True)
    deleted = client.delete(f"/v1/volumes/claim/{claimed['ID']}")
    assert deleted.status_code == 200 and int(deleted.headers["X-Nomad-Index"]) > claimed["ModifyIndex"]
    assert json_body(client.get("/v1/volumes/claims")) == []
    assert client.delete(f"/v1/volume/host/{volume_id}").status_code == 200


def test_purging_the_job_deletes_its_claims(client: FlaskClient, engine: Engine, term: tuple[Leadership, int]) -> None:
    volume_id = _ready_volume(client)
    register(client, _sticky_job())
    _schedule(engine, term)
    assert len(json_body(client.get("/v1/volumes/claims"))) == 1
    assert client.delete("/v1/job/db?purge=true").status_code == 200
    assert json_body(client.get("/v1/volumes/claims")) == []
    assert client.get(f"/v1/volume/host/{volume_id}").status_code == 200


def test_bad_claim_requests_name_the_field(client: FlaskClient) -> None:
    malformed = client.delete("/v1/volumes/claim/not-a-uuid")
    assert malformed.status_code == 400 and "ClaimID" in malformed.get_data(as_text=True)
    unknown = client.delete(f"/v1/volumes/claim/{uuid.uuid4()}")
    assert unknown.status_code == 404 and "does not exist" in unknown.get_data(as_text=True)
    assert client.put(f"/v1/volumes/claim/{uuid.uuid4()}").status_code == 405
    wildcard = client.delete(f"/v1/volumes/claim/{uuid.uuid4()}?namespace=*")
    assert wildcard.status_code == 400 and "namespace" in wildcard.get_data(as_text=True)


def test_per_alloc_and_sticky_together_are_refused(client: FlaskClient) -> None:
    reply = client.put("/v1/jobs", json={"Job": _sticky_job(PerAlloc=True)})
    assert reply.status_code == 400
    assert "per_alloc and sticky" in reply.get_data(as_text=True) and "PerAlloc" in reply.get_data(as_text=True)
    system = _sticky_job("sys", Sticky=False, PerAlloc=True) | {"Type": "system"}
    reply = client.put("/v1/jobs", json={"Job": system})
    assert reply.status_code == 400 and "system or sysbatch" in reply.get_data(as_text=True)


@pytest.fixture
def acl_client(database_url: str) -> Iterator[FlaskClient]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    yield app.test_client()
    app.extensions["corral"].close()


def _token(client: FlaskClient, root: str, name: str, rules: str) -> dict[str, str]:
    headers = {"X-Nomad-Token": root}
    assert client.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=headers).status_code == 200
    made = client.put("/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers=headers)
    assert made.status_code == 200 and made.json is not None
    return {"X-Nomad-Token": str(made.json["SecretID"])}


def test_claims_need_host_volume_read_to_list_and_delete_to_delete(acl_client: FlaskClient) -> None:
    root = str(json_body(acl_client.post("/v1/acl/bootstrap"))["SecretID"])
    reader = _token(acl_client, root, "reader", 'namespace "default" { capabilities = ["host-volume-read"] }')
    deleter = _token(acl_client, root, "deleter", 'namespace "default" { capabilities = ["host-volume-delete"] }')
    other = _token(acl_client, root, "other", 'namespace "prod" { capabilities = ["host-volume-read"] }')
    assert acl_client.get("/v1/volumes/claims").status_code == 403
    assert acl_client.get("/v1/volumes/claims", headers=reader).status_code == 200
    assert acl_client.get("/v1/volumes/claims", headers=other).status_code == 403
    assert json_body(acl_client.get("/v1/volumes/claims?namespace=*", headers=other)) == []
    some_claim = f"/v1/volumes/claim/{uuid.uuid4()}"
    assert acl_client.delete(some_claim, headers=reader).status_code == 403
    assert acl_client.delete(some_claim, headers=deleter).status_code == 404  # allowed; nothing to delete


def test_a_replacement_keeps_the_claim_which_moves_to_it(
    client: FlaskClient, engine: Engine, term: tuple[Leadership, int]
) -> None:
    """The first allocation is lost with its node's volume still there: the replacement goes to
    the claimed volume, and the claim (same ID) now names the replacement."""
    volumes = {_ready_volume(client), _ready_volume(client)}  # two nodes with a volume of the name
    register(client, _sticky_job())
    _schedule(engine, term)
    (before,) = json_body(client.get("/v1/volumes/claims"))
    claimed = [v for v in volumes if v == before["VolumeID"]]  # the first placement's, either one
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE allocations SET desired_status = 'stop', client_status = 'complete'")
    assert client.put("/v1/job/db/evaluate", json={}).status_code == 200
    _schedule(engine, term)
    (after,) = json_body(client.get("/v1/volumes/claims"))
    live = [a for a in json_body(client.get("/v1/job/db/allocations")) if a["ClientStatus"] == "pending"]
    assert [a["ID"] for a in live] == [after["AllocID"]] and after["AllocID"] != before["AllocID"]
    assert (after["ID"], after["VolumeID"], after["CreateIndex"]) == (before["ID"], *claimed, before["CreateIndex"])
    assert after["ModifyIndex"] > before["ModifyIndex"]


def test_a_per_alloc_volume_in_use_by_its_index_is_not_deleted(client: FlaskClient, engine: Engine) -> None:
    """Nomad's MatchesRequestSource: `data[0]` is the volume of allocation index 0 of a group
    whose per_alloc request names `data`, and not of index 1's."""
    volume_id = _ready_volume(client, "data[0]")
    other_id = _ready_volume(client, "data[1]")
    register(client, _sticky_job("per", Sticky=False, PerAlloc=True))
    node_id = json_body(client.get(f"/v1/volume/host/{volume_id}"))["NodeID"]
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, "
            "name, desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, "
            "modify_index, alloc_modify_index) "
            "SELECT gen_random_uuid(), 'default', 'per', 0, e.id, %s, 'n', 'g', 'per.g[0]', 'run', 'running', "
            "100, 64, 64, 300, state_index_own(), state_index_own(), state_index_own() "
            "FROM evaluations e WHERE e.job_id = 'per' LIMIT 1",
            (uuid.UUID(node_id),),
        )
    refused = client.delete(f"/v1/volume/host/{volume_id}")
    assert refused.status_code == 400 and "in use by allocations" in refused.get_data(as_text=True)
    assert [a["Name"] for a in json_body(client.get(f"/v1/volume/host/{volume_id}"))["Allocations"]] == ["per.g[0]"]
    assert client.delete(f"/v1/volume/host/{other_id}").status_code == 200
