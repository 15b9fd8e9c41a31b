"""Dynamic host volumes (Nomad 1.10) over the API: create picks (or checks) a node and the volume
is pending until the node's client reports it in Node.HostVolumes with its ID, then ready and in
the scheduler's snapshot; register records an existing path; delete is refused while an
allocation uses the volume; bad input is a 400 naming the field. The CSI routes answer honestly."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine

from app.pipeline.snapshot import SnapshotLoader
from app.structs import Evaluation
from tests.support.api import json_body, node_body, register

pytestmark = pytest.mark.integration


def _node(client: FlaskClient, **fields: Any) -> tuple[str, str]:
    node_id, secret = str(uuid.uuid4()), str(uuid.uuid4())
    reply = client.put(
        "/v1/node/register", json={"Node": node_body(node_id, SecretID=secret, Status="ready", **fields)}
    )
    assert reply.status_code == 200, reply.get_data(as_text=True)
    return node_id, secret


def _create(client: FlaskClient, volume: dict[str, Any], path: str = "create") -> Any:
    return client.put(f"/v1/volume/host/{path}", json={"Volume": volume})


def _problems(reply: Any) -> str:
    assert reply.status_code == 400, reply.get_data(as_text=True)
    return str(reply.get_data(as_text=True))


def _report(client: FlaskClient, node_id: str, secret: str, volumes: dict[str, Any], **fields: Any) -> None:
    body = node_body(node_id, SecretID=secret, Status="ready", HostVolumes=volumes, **fields)
    reply = client.put("/v1/node/register", json={"Node": body})
    assert reply.status_code == 200, reply.get_data(as_text=True)


def test_create_is_pending_until_the_client_reports_it_then_ready(client: FlaskClient, engine: Engine) -> None:
    node_id, secret = _node(client)
    asked = {"Name": "scratch", "PluginID": "mkdir", "NodeID": node_id, "Parameters": {"mode": "0700"}}
    created = _create(client, asked)
    assert created.status_code == 200, created.get_data(as_text=True)
    volume = json_body(created)["Volume"]
    assert (volume["State"], volume["NodeID"], volume["HostPath"]) == ("pending", node_id, "")
    assert volume["RequestedCapabilities"] == [{"AttachmentMode": "file-system", "AccessMode": "single-node-writer"}]
    own = client.get(f"/v1/node/{node_id}/host-volumes", headers={"X-Nomad-Token": secret})
    assert [(v["ID"], v["PluginID"], v["Parameters"]) for v in json_body(own)] == [
        (volume["ID"], "mkdir", {"mode": "0700"})
    ]
    assert client.get(f"/v1/node/{node_id}/host-volumes", headers={"X-Nomad-Token": "wrong"}).status_code == 403

    path = f"/srv/volumes/{volume['ID']}"
    _report(client, node_id, secret, {"scratch": {"Name": "scratch", "Path": path, "ID": volume["ID"]}})
    read = json_body(client.get(f"/v1/volume/host/{volume['ID']}"))
    assert (read["State"], read["HostPath"]) == ("ready", path)
    listed = json_body(client.get("/v1/volumes?type=host"))
    assert [(v["ID"], v["Name"], v["State"]) for v in listed] == [(volume["ID"], "scratch", "ready")]
    assert json_body(client.get(f"/v1/volumes?type=host&node_id={uuid.uuid4()}")) == []

    ev = Evaluation(uuid.uuid4(), "default", "absent", "service", 50, "job-register", 1)
    (node,) = SnapshotLoader(engine).load(ev).nodes
    assert dict(node.dynamic_host_volumes) == {("default", "scratch"): uuid.UUID(volume["ID"])}
    assert dict(node.host_volumes) == {}

    _report(client, node_id, secret, {})  # the client no longer reports it
    assert json_body(client.get(f"/v1/volume/host/{volume['ID']}"))["State"] == "unavailable"


def test_create_places_on_a_ready_node_meeting_the_constraints(client: FlaskClient) -> None:
    _node(client, Meta={"disk": "hdd"})
    ssd, _ = _node(client, Meta={"disk": "ssd"})
    constraint = {"LTarget": "${meta.disk}", "RTarget": "ssd", "Operand": "="}
    placed = json_body(_create(client, {"Name": "fast", "Constraints": [constraint]}))["Volume"]
    assert placed["NodeID"] == ssd and placed["NodePool"] == "default"
    # A second volume of that name cannot go on the same node: the only other one is hdd.
    refused = _create(client, {"Name": "fast", "Constraints": [constraint]})
    assert "NodePool" in _problems(refused) and "fast" in refused.get_data(as_text=True)
    wrong_pool = _create(client, {"Name": "x", "NodeID": ssd, "NodePool": "gpu"})
    assert "NodePool" in _problems(wrong_pool) and "'gpu'" in wrong_pool.get_data(as_text=True)
    unmet = _create(client, {"Name": "y", "NodeID": ssd, "Constraints": [{**constraint, "RTarget": "nvme"}]})
    assert "Constraints" in _problems(unmet) and "${meta.disk} = nvme" in unmet.get_data(as_text=True)


def test_bad_requests_name_the_field(client: FlaskClient) -> None:
    node_id, _ = _node(client)
    assert "Volume.Name" in _problems(_create(client, {"NodeID": node_id}))
    assert "Volume.PluginID" in _problems(_create(client, {"Name": "a", "PluginID": "lvm", "NodeID": node_id}))
    capacity = {"Name": "a", "RequestedCapacityMinBytes": 10, "RequestedCapacityMaxBytes": 5}
    assert "Volume.RequestedCapacityMaxBytes" in _problems(_create(client, capacity))
    assert "Volume.NodeID" in _problems(_create(client, {"Name": "a", "NodeID": "not-a-uuid"}))
    bad_mode = {"Name": "a", "RequestedCapabilities": [{"AttachmentMode": "file-system", "AccessMode": "everyone"}]}
    assert "Volume.RequestedCapabilities[0].AccessMode" in _problems(_create(client, bad_mode))
    assert "Volume.HostPath" in _problems(_create(client, {"Name": "a", "NodeID": node_id}, "register"))
    assert "Volume.NodeID" in _problems(_create(client, {"Name": "a", "HostPath": "/srv/a"}, "register"))
    assert "Volume.Namespace" in _problems(_create(client, {"Name": "a", "Namespace": "prod", "NodeID": node_id}))
    missing = client.put("/v1/volume/host/create", json={})
    assert "Volume" in _problems(missing)
    assert client.get(f"/v1/volume/host/{uuid.uuid4()}").status_code == 404
    assert json_body(client.get("/v1/volumes")) == []  # Nomad: no type, no volumes
    assert client.get("/v1/volumes?type=nfs").status_code == 404


def test_register_records_an_existing_path_ready_once_the_node_reports_it(client: FlaskClient) -> None:
    node_id, secret = _node(client, HostVolumes={"static": {"Name": "static", "Path": "/srv/static"}})
    taken = _create(client, {"Name": "static", "NodeID": node_id, "HostPath": "/srv/other"}, "register")
    assert "Name" in _problems(taken)  # the node's static volume has that name
    reply = _create(client, {"Name": "data", "NodeID": node_id, "HostPath": "/srv/data"}, "register")
    volume = json_body(reply)["Volume"]
    assert (volume["State"], volume["HostPath"], volume["PluginID"]) == ("pending", "/srv/data", "")
    reported = {
        "static": {"Name": "static", "Path": "/srv/static"},
        "data": {"Name": "data", "Path": "/srv/data", "ID": volume["ID"]},
    }
    _report(client, node_id, secret, reported)
    assert json_body(client.get(f"/v1/volume/host/{volume['ID']}"))["State"] == "ready"
    node = json_body(client.get(f"/v1/node/{node_id}"))
    assert node["HostVolumes"]["data"]["ID"] == volume["ID"]


def test_delete_is_refused_while_an_allocation_uses_the_volume(client: FlaskClient, engine: Engine) -> None:
    node_id, _ = _node(client)
    volume = json_body(_create(client, {"Name": "scratch", "NodeID": node_id}))["Volume"]
    job = {
        "ID": "writer",
        "TaskGroups": [
            {
                "Name": "g",
                "Count": 1,
                "Volumes": {"v": {"Name": "v", "Type": "host", "Source": "scratch"}},
                "Tasks": [{"Name": "t", "Driver": "mock"}],
            }
        ],
    }
    register(client, job)
    with engine.begin() as conn:
        conn.exec_driver_sql(
            "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, "
            "name, desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, "
            "modify_index, alloc_modify_index) "
            "SELECT gen_random_uuid(), 'default', 'writer', 0, e.id, %s, 'n', 'g', 'writer.g[0]', 'run', 'running', "
            "100, 64, 64, 300, state_index_own(), state_index_own(), state_index_own() "
            "FROM evaluations e WHERE e.job_id = 'writer' LIMIT 1",
            (uuid.UUID(node_id),),
        )
    read = json_body(client.get(f"/v1/volume/host/{volume['ID']}"))
    assert [a["JobID"] for a in read["Allocations"]] == ["writer"]
    refused = client.delete(f"/v1/volume/host/{volume['ID']}")
    assert "in use by allocations" in _problems(refused)
    with engine.begin() as conn:
        conn.exec_driver_sql("UPDATE allocations SET client_status = 'complete'")
    assert client.delete(f"/v1/volume/host/{volume['ID']}").status_code == 200
    assert client.get(f"/v1/volume/host/{volume['ID']}").status_code == 404


def test_csi_routes_answer_honestly(client: FlaskClient) -> None:
    assert json_body(client.get("/v1/volumes?type=csi")) == []
    assert json_body(client.get("/v1/plugins?type=csi")) == []
    for method, path in (
        ("GET", "/v1/plugin/csi/ebs"),
        ("GET", "/v1/volume/csi/db"),
        ("PUT", "/v1/volume/csi/db/create"),
        ("PUT", "/v1/volume/csi/db"),
        ("DELETE", "/v1/volume/csi/db/detach"),
        ("GET", "/v1/volumes/snapshot"),
        ("GET", "/v1/volumes/external"),
    ):
        reply = client.open(path, method=method, json={})
        assert reply.status_code == 501, (method, path)
        assert "host volumes" in reply.get_data(as_text=True)
