"""Key-by-key shape of the API's objects against the field lists of Nomad's structs.

Each object must carry every key of its Nomad struct and no other (issue 19 item 8): jobs
as ``GET /v1/job/:id``, its versions and an allocation's embedded job send them, with
Nomad's defaults filled in; evaluations, allocations, nodes and the list stubs.
"""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support import nomad_fields as nomad
from tests.support.api import json_body, minimal_job, node_body, register
from tests.support.full_job import FULL_JOB
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]

SECOND = 1_000_000_000


def assert_keys(obj: Any, expected: list[str], where: str) -> None:
    """Every key of the Nomad struct and no other, named if not."""
    assert isinstance(obj, dict), f"{where} is {obj!r}, not an object"
    missing, extra = sorted(set(expected) - set(obj)), sorted(set(obj) - set(expected))
    assert (missing, extra) == ([], []), f"{where}: missing {missing}, extra {extra}"


def assert_each(items: Any, expected: list[str], where: str) -> None:
    assert isinstance(items, list) and items, f"{where} is {items!r}, not a non-empty list"
    for i, item in enumerate(items):
        assert_keys(item, expected, f"{where}[{i}]")


def assert_job_shape(job: dict[str, Any]) -> None:
    """The job and each struct in it that it sets, down to ports and spread targets."""
    assert_keys(job, nomad.JOB, "Job")
    assert_keys(job["Update"], nomad.UPDATE_STRATEGY, "Job.Update")
    for g, group in enumerate(job["TaskGroups"]):
        where = f"Job.TaskGroups[{g}]"
        assert_keys(group, nomad.TASK_GROUP, where)
        assert_keys(group["EphemeralDisk"], nomad.EPHEMERAL_DISK, f"{where}.EphemeralDisk")
        assert_keys(group["RestartPolicy"], nomad.RESTART_POLICY, f"{where}.RestartPolicy")
        for key, fields in [
            ("Update", nomad.UPDATE_STRATEGY),
            ("Migrate", nomad.MIGRATE_STRATEGY),
            ("ReschedulePolicy", nomad.RESCHEDULE_POLICY),
            ("Scaling", nomad.SCALING_POLICY),
            ("Disconnect", nomad.DISCONNECT_STRATEGY),
        ]:
            if group[key] is not None:
                assert_keys(group[key], fields, f"{where}.{key}")
        for n, network in enumerate(group["Networks"] or []):
            assert_keys(network, nomad.NETWORK_RESOURCE, f"{where}.Networks[{n}]")
            for ports in ("ReservedPorts", "DynamicPorts"):
                for p, port in enumerate(network[ports] or []):
                    assert_keys(port, nomad.PORT, f"{where}.Networks[{n}].{ports}[{p}]")
        for t, task in enumerate(group["Tasks"]):
            assert_task_shape(task, f"{where}.Tasks[{t}]")
    assert_placement_shape(job, "Job")


def assert_task_shape(task: dict[str, Any], where: str) -> None:
    assert_keys(task, nomad.TASK, where)
    assert_keys(task["Resources"], nomad.RESOURCES, f"{where}.Resources")
    assert_keys(task["LogConfig"], nomad.LOG_CONFIG, f"{where}.LogConfig")
    assert_keys(task["RestartPolicy"], nomad.RESTART_POLICY, f"{where}.RestartPolicy")
    for key, fields in [
        ("Lifecycle", nomad.TASK_LIFECYCLE_CONFIG),
        ("DispatchPayload", nomad.DISPATCH_PAYLOAD_CONFIG),
    ]:
        if task[key] is not None:
            assert_keys(task[key], fields, f"{where}.{key}")
    for c, constraint in enumerate(task["Constraints"] or []):
        assert_keys(constraint, nomad.CONSTRAINT, f"{where}.Constraints[{c}]")


def assert_placement_shape(job: dict[str, Any], where: str) -> None:
    for c, constraint in enumerate(job["Constraints"] or []):
        assert_keys(constraint, nomad.CONSTRAINT, f"{where}.Constraints[{c}]")
    for a, affinity in enumerate(job["Affinities"] or []):
        assert_keys(affinity, nomad.AFFINITY, f"{where}.Affinities[{a}]")
    for s, spread in enumerate(job["Spreads"] or []):
        assert_keys(spread, nomad.SPREAD, f"{where}.Spreads[{s}]")
        assert_each(spread["SpreadTarget"], nomad.SPREAD_TARGET, f"{where}.Spreads[{s}].SpreadTarget")


def get(client: FlaskClient, path: str) -> Any:
    resp = client.get(path)
    assert resp.status_code == 200, resp.json
    return resp.json


def test_minimal_job_has_every_key_with_nomads_defaults(client: FlaskClient) -> None:
    register(client, minimal_job("web"))
    job = get(client, "/v1/job/web")
    assert_job_shape(job)
    # Nomad keeps only stagger and max_parallel of the update block on the job.
    assert job["Update"] == {
        "Stagger": 30 * SECOND,
        "MaxParallel": 1,
        "HealthCheck": "",
        "MinHealthyTime": 0,
        "HealthyDeadline": 0,
        "ProgressDeadline": 0,
        "AutoRevert": False,
        "AutoPromote": False,
        "Canary": 0,
    }
    group = job["TaskGroups"][0]
    assert group["EphemeralDisk"] == {"Sticky": False, "SizeMB": 300, "Migrate": False}
    assert group["Update"]["HealthCheck"] == "checks" and group["Migrate"]["MaxParallel"] == 1
    task = group["Tasks"][0]
    assert task["LogConfig"] == {"MaxFiles": 10, "MaxFileSizeMB": 10, "Disabled": False}
    assert task["Resources"]["CPU"] == 100 and task["Resources"]["MemoryMB"] == 300
    assert task["KillTimeout"] == 5 * SECOND and task["Lifecycle"] is None and task["Templates"] is None
    assert job["Name"] == "web" and job["Namespace"] == "default" and job["ParentID"] == ""


def test_full_job_has_every_key_of_every_struct(client: FlaskClient) -> None:
    register(client, FULL_JOB)
    job = get(client, "/v1/job/full")
    assert_job_shape(job)
    group = job["TaskGroups"][0]
    init = group["Tasks"][0]
    assert init["LogConfig"] == {"MaxFiles": 3, "MaxFileSizeMB": 10, "Disabled": False}
    assert init["Lifecycle"] == {"Hook": "prestart", "Sidecar": False}
    assert group["EphemeralDisk"]["SizeMB"] == 500
    assert group["Scaling"]["Target"] == {"Namespace": "default", "Job": "full", "Group": "g"}
    assert group["ReschedulePolicy"]["Attempts"] == 3 and group["Migrate"]["MaxParallel"] == 2
    assert job["Update"]["MaxParallel"] == 2 and job["Update"]["Canary"] == 0 and group["Update"]["Canary"] == 1
    # Nomad folds the job's reschedule and migrate blocks into the groups.
    assert "Reschedule" not in job and "Migrate" not in job
    assert job["Meta"] == {"team": "a"}


@pytest.mark.parametrize(
    ("extra", "group_key", "task_key"),
    [
        ({"Periodic": {"Spec": "*/5 * * * *"}}, "Periodic", nomad.PERIODIC_CONFIG),
        ({"ParameterizedJob": {"Payload": "optional", "MetaRequired": ["x"]}}, "ParameterizedJob", None),
    ],
)
def test_batch_job_blocks_have_every_key(
    client: FlaskClient, extra: dict[str, Any], group_key: str, task_key: list[str] | None
) -> None:
    register(client, minimal_job("launcher", Type="batch", **extra))
    job = get(client, "/v1/job/launcher")
    assert_job_shape(job)
    assert_keys(job[group_key], task_key or nomad.PARAMETERIZED_JOB_CONFIG, f"Job.{group_key}")
    # No update block for a batch job: Nomad sends the job's zero value and null groups'.
    assert job["Update"] == {key: type(value)() for key, value in job["Update"].items()}
    assert job["Update"]["HealthCheck"] == "" and job["Update"]["MaxParallel"] == 0
    assert job["TaskGroups"][0]["Update"] is None and job["TaskGroups"][0]["Migrate"] is None


def test_children_have_every_key(client: FlaskClient) -> None:
    register(client, minimal_job("param", Type="batch", ParameterizedJob={"Payload": "optional"}))
    dispatched = client.post("/v1/job/param/dispatch", json={"Meta": {}})
    assert dispatched.status_code == 200, dispatched.json
    assert dispatched.json is not None
    child = get(client, f"/v1/job/{dispatched.json['DispatchedJobID']}")
    assert_job_shape(child)
    assert child["ParentID"] == "param" and child["Dispatched"] is True
    register(client, minimal_job("cron", Type="batch", Periodic={"Spec": "0 0 1 1 *"}))
    assert client.post("/v1/job/cron/periodic/force").status_code == 200
    launched = [j for j in get(client, "/v1/jobs") if j["ParentID"] == "cron"]
    assert len(launched) == 1
    child = get(client, f"/v1/job/{launched[0]['ID']}")
    assert_job_shape(child)
    assert child["ParentID"] == "cron" and child["Dispatched"] is False


def test_read_back_jobs_register_again_unchanged(client: FlaskClient) -> None:
    """What GET sends is a job Nomad (and corral) accept back: nothing new is registered."""
    for job_id, job in [("full", FULL_JOB), ("batch", minimal_job("batch", Type="batch"))]:
        register(client, job)
        read_back = get(client, f"/v1/job/{job_id}")
        again = register(client, read_back)
        assert again["JobModifyIndex"] == read_back["JobModifyIndex"], job_id
        assert get(client, f"/v1/job/{job_id}")["Version"] == 0


def test_read_back_job_plans_as_no_change(client: FlaskClient) -> None:
    register(client, FULL_JOB)
    read_back = get(client, "/v1/job/full")
    resp = client.post("/v1/job/full/plan", json={"Job": read_back, "Diff": True})
    assert resp.status_code == 200, resp.json
    assert json_body(resp)["Diff"]["Type"] == "None", resp.json


def test_versions_have_every_key(client: FlaskClient) -> None:
    register(client, minimal_job("web"))
    register(client, minimal_job("web", Priority=70))
    versions = get(client, "/v1/job/web/versions")["Versions"]
    assert len(versions) == 2
    for version in versions:
        assert_job_shape(version)


@pytest.mark.parametrize("path", ["/v1/jobs", "/v1/job/web"])
def test_unknown_keys_are_refused_by_path(client: FlaskClient, path: str) -> None:
    job = minimal_job("web", Bogus=1)
    job["TaskGroups"][0]["Tasks"][0]["Bogus"] = True
    job["TaskGroups"][0]["Cout"] = 3
    job["TaskGroups"][0]["Tasks"][0]["Resources"] = {"CPU": 100, "Memroy": 64}
    resp = client.put(path, json={"Job": job})
    assert resp.status_code == 400
    assert resp.json is not None
    assert {e["field"] for e in resp.json["errors"]} == {
        "Job.Bogus",
        "Job.TaskGroups[0].Cout",
        "Job.TaskGroups[0].Tasks[0].Bogus",
        "Job.TaskGroups[0].Tasks[0].Resources.Memroy",
    }
    assert client.get("/v1/job/web").status_code == 404


def test_job_list_stub_has_every_key(client: FlaskClient) -> None:
    register(client, minimal_job("web"))
    register(client, minimal_job("tagged", Meta={"a": "b"}))
    stubs = {s["ID"]: s for s in get(client, "/v1/jobs")}
    assert_keys(stubs["web"], nomad.JOB_LIST_STUB, "JobListStub")
    # Meta is omitempty in Nomad's stub.
    assert_keys(stubs["tagged"], [*nomad.JOB_LIST_STUB, "Meta"], "JobListStub")


def test_evaluation_has_every_key(client: FlaskClient) -> None:
    eval_id = register(client, minimal_job("web"))["EvalID"]
    assert_keys(get(client, f"/v1/evaluation/{eval_id}"), nomad.EVALUATION + nomad.EVALUATION_EXTENSIONS, "Evaluation")
    related = get(client, f"/v1/evaluation/{eval_id}?related=true")
    assert_keys(related, nomad.EVALUATION + nomad.EVALUATION_EXTENSIONS, "Evaluation")
    for stub in related["RelatedEvals"]:
        assert_keys(stub, nomad.EVALUATION_STUB, "EvaluationStub")
    assert_each(get(client, "/v1/evaluations"), nomad.EVALUATION + nomad.EVALUATION_EXTENSIONS, "Evaluations")


def test_node_and_allocation_have_every_key(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    assert_keys(get(client, f"/v1/node/{node_id}"), nomad.NODE + nomad.NODE_EXTENSIONS, "Node")
    assert_each(get(client, "/v1/nodes"), nomad.NODE_LIST_STUB, "NodeListStub")

    eval_id = register(client, minimal_job("web"))["EvalID"]
    alloc_id = insert_allocation(pg, node_id, eval_id)
    alloc = get(client, f"/v1/allocation/{alloc_id}")
    assert_keys(alloc, nomad.ALLOCATION, "Allocation")
    assert_job_shape(alloc["Job"])
    assert alloc["Job"]["Version"] == 0 and alloc["Job"]["ID"] == "web" and alloc["Job"]["SubmitTime"] > 0
    assert alloc["Job"]["JobModifyIndex"] == get(client, "/v1/job/web")["JobModifyIndex"]
    # corral's lists add the full allocation's other keys to Nomad's stub, but its Job and its
    # Metrics (five nodes' scores on every row of a big job's list; read them one allocation at a time).
    listed = [*nomad.ALLOC_LIST_STUB, *nomad.OMIT_EMPTY_ALLOC_LIST_STUB]
    beyond_stub = sorted(set(nomad.ALLOCATION) - set(listed) - {"Job", "Metrics"})
    for path in ["/v1/allocations", "/v1/job/web/allocations", f"/v1/node/{node_id}/allocations"]:
        entries = get(client, path)
        assert_each(entries, sorted(set(listed) | set(beyond_stub)), path)
        assert entries[0]["JobType"] == "service" and entries[0]["JobVersion"] == 0
