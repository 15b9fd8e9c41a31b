"""GET /v1/event/stream: the events each write produces (topics, types, keys, payloads), topic,
key and namespace filters, ACLs, heartbeats, resuming by index, retention GC, and rollbacks."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app import create_app
from app.db.leadership import Leadership
from app.leader import event_gc
from app.settings.config import Settings
from app.store import events as event_store
from app.structs import Plan
from client.tasks import task_state
from tests.support.api import json_body, minimal_job, node_body, register
from tests.support.events import events, has, heartbeats, read_frames
from tests.support.pipeline import alloc, apply, claim, submit
from tests.support.rows import deployed_alloc, group_state, insert_deployment, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
SETTINGS: dict[str, Any] = {"max_blocking_wait_s": 5, "event_stream_heartbeat_s": 0.2}


@pytest.fixture
def client(database_url: str) -> Iterator[FlaskClient]:
    app = create_app(Settings(database_url=database_url, **SETTINGS), database_url)
    yield app.test_client()
    app.extensions["corral"].close()


def kinds(frames: list[dict[str, Any]]) -> list[tuple[str, str, str]]:
    return [(e["Topic"], e["Type"], e["Key"]) for e in events(frames)]


def test_job_register_publishes_the_job_and_its_evaluation_in_one_frame(client: FlaskClient) -> None:
    reg = register(client, minimal_job("web"))
    frames = read_frames(client, until=has("Evaluation", "EvaluationUpdated"))
    assert frames[0] == {}  # the stream opens with a heartbeat, as Nomad's does
    frame = next(f for f in frames if f.get("Events"))
    assert frame["Index"] == reg["JobModifyIndex"] == reg["EvalCreateIndex"]
    job, evaluation = sorted(frame["Events"], key=lambda e: e["Topic"] != "Job")
    assert {k: job[k] for k in ("Topic", "Type", "Key", "Namespace", "FilterKeys", "Index")} == {
        "Topic": "Job",
        "Type": "JobRegistered",
        "Key": "web",
        "Namespace": "default",
        "FilterKeys": None,
        "Index": frame["Index"],
    }
    assert job["Payload"]["Job"]["ID"] == "web" and job["Payload"]["Job"]["ModifyIndex"] == frame["Index"]
    assert job["Payload"]["Job"]["Status"] == "pending" and "Deleted" not in job["Payload"]
    assert (evaluation["Type"], evaluation["Key"], evaluation["FilterKeys"]) == (
        "EvaluationUpdated",
        reg["EvalID"],
        ["web", ""],
    )
    assert evaluation["Payload"]["Evaluation"]["JobID"] == "web"
    assert evaluation["Payload"]["Evaluation"]["Status"] == "pending"


def test_update_stop_and_purge_are_registered_then_deregistered(client: FlaskClient) -> None:
    first = register(client, minimal_job("web"))
    second = register(client, minimal_job("web", Meta={"v": "2"}))
    assert client.delete("/v1/job/web").status_code == 200
    assert client.delete("/v1/job/web?purge=true").status_code == 200
    frames = read_frames(client, f"index={second['Index']}&topic=Job", until=heartbeats(3))
    jobs = [e for e in events(frames) if e["Topic"] == "Job"]
    assert [e["Type"] for e in jobs] == ["JobRegistered", "JobDeregistered", "JobDeregistered"]
    assert jobs[0]["Index"] == second["Index"] > first["Index"]  # ?index= is inclusive, as in Nomad
    assert jobs[0]["Payload"]["Job"]["Meta"] == {"v": "2"}
    assert jobs[1]["Payload"]["Job"]["Stop"] is True and "Deleted" not in jobs[1]["Payload"]
    assert jobs[2]["Payload"]["Deleted"] is True
    assert jobs[0]["Index"] < jobs[1]["Index"] < jobs[2]["Index"]


def test_node_register_drain_and_eligibility(client: FlaskClient) -> None:
    node_id = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    drain = {"DrainSpec": {"Deadline": 3_600_000_000_000}, "MarkEligible": False}
    assert client.post(f"/v1/node/{node_id}/drain", json=drain).status_code == 200
    assert client.post(f"/v1/node/{node_id}/drain", json={"DrainSpec": None}).status_code == 200
    assert client.post(f"/v1/node/{node_id}/eligibility", json={"Eligibility": "eligible"}).status_code == 200
    frames = read_frames(client, "topic=Node", until=has("Node", "NodeEligibility"))
    found = [e for e in events(frames) if e["Topic"] == "Node"]
    assert [e["Type"] for e in found] == ["NodeRegistration", "NodeDrain", "NodeDrain", "NodeEligibility"]
    assert {e["Key"] for e in found} == {node_id} and {e["Namespace"] for e in found} == {""}
    node = found[1]["Payload"]["Node"]
    assert node["ID"] == node_id and node["SecretID"] == "" and node["DrainStrategy"] is not None
    assert found[2]["Payload"]["Node"]["DrainStrategy"] is None
    assert found[2]["Payload"]["Node"]["SchedulingEligibility"] == "ineligible"  # the drain's MarkEligible
    assert found[3]["Payload"]["Node"]["SchedulingEligibility"] == "eligible"


@pytest.fixture
def applier(engine: Engine) -> Iterator[tuple[Leadership, int]]:
    lead = Leadership(engine, "applier")
    assert lead.try_acquire() and lead.term is not None
    yield lead, lead.term
    lead.close()


def test_placement_and_client_update_publish_plan_result_then_allocation_updated(
    client: FlaskClient, engine: Engine, applier: tuple[Leadership, int]
) -> None:
    node_id = str(uuid.uuid4())
    secret = json_body(client.put("/v1/node/register", json={"Node": node_body(node_id)}))["SecretID"]
    register(client, minimal_job("web"))
    held = claim(engine)
    assert held is not None
    placed = alloc(held, node_id, 0)
    submit(engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node_id): (placed,)}))
    assert apply(*applier) is not None
    update = {"ID": str(placed.id), "ClientStatus": "running", "TaskStates": {"t": {"State": "running"}}}
    answer = client.put(f"/v1/node/{node_id}/allocations", json={"Allocs": [update]}, headers={"X-Nomad-Token": secret})
    assert answer.status_code == 200

    frames = read_frames(client, "topic=Allocation", until=has("Allocation", "AllocationUpdated"))
    found = [e for e in events(frames) if e["Topic"] == "Allocation"]
    assert [(e["Type"], e["Key"]) for e in found] == [
        ("PlanResult", str(placed.id)),
        ("AllocationUpdated", str(placed.id)),
    ]
    assert found[0]["FilterKeys"] == ["web", ""] and found[0]["Namespace"] == "default"
    first, second = (e["Payload"]["Allocation"] for e in found)
    # Each event carries the allocation as that change wrote it, not as it is now.
    assert (first["ClientStatus"], second["ClientStatus"]) == ("pending", "running")
    assert (
        second["TaskStates"] == {"t": {**task_state.new_state(), "State": "running", "Events": None}}
        and second["Job"] is None
    )  # lists and events leave the job out
    assert first["ModifyIndex"] == found[0]["Index"] < second["ModifyIndex"] == found[1]["Index"]


def test_deployment_promotion(client: FlaskClient, pg: Conn) -> None:
    reg = register(client, minimal_job("web"))
    dep = insert_deployment(pg, groups={"g": group_state(DesiredCanaries=1, DesiredTotal=2)})
    deployed_alloc(pg, insert_node(pg), reg["EvalID"], dep, healthy=True, canary=True)
    resp = client.post(f"/v1/deployment/promote/{dep}", json={"DeploymentID": dep, "All": True})
    assert resp.status_code == 200, resp.json
    index = json_body(resp)["Index"]
    fail = client.post(f"/v1/deployment/fail/{dep}", json={"DeploymentID": dep})
    assert fail.status_code == 200, fail.json
    frames = read_frames(client, f"index={index}&topic=Deployment:{dep}", until=heartbeats(3))
    found = events(frames)
    assert [(e["Type"], e["Key"]) for e in found] == [("DeploymentPromotion", dep), ("DeploymentStatusUpdate", dep)]
    assert found[0]["Index"] == index and found[0]["FilterKeys"] == ["web"]
    promoted = found[0]["Payload"]["Deployment"]
    assert promoted["TaskGroups"]["g"]["Promoted"] is True and promoted["Status"] == "running"
    assert found[1]["Payload"]["Deployment"]["Status"] == "failed"


def test_topic_and_key_filters_match_keys_and_filter_keys(client: FlaskClient) -> None:
    web, api = register(client, minimal_job("web")), register(client, minimal_job("api"))
    done = heartbeats(3)
    only_web = read_frames(client, "topic=Job:web", until=done)
    assert kinds(only_web) == [("Job", "JobRegistered", "web")]
    # An evaluation's FilterKeys hold its job: Evaluation:<job> follows the job's evaluations.
    evals = read_frames(client, "topic=Evaluation:api", until=done)
    assert kinds(evals) == [("Evaluation", "EvaluationUpdated", api["EvalID"])]
    both = read_frames(client, "topic=Job:web&topic=Evaluation:*", until=done)
    assert sorted(kinds(both)) == sorted(
        [
            ("Job", "JobRegistered", "web"),
            ("Evaluation", "EvaluationUpdated", web["EvalID"]),
            ("Evaluation", "EvaluationUpdated", api["EvalID"]),
        ]
    )
    everything = read_frames(client, "topic=*", until=done)
    assert len(events(everything)) == 4
    assert [f["Index"] for f in everything if f.get("Events")] == [web["Index"], api["Index"]]
    bad = client.get("/v1/event/stream?topic=Job:a:b")
    assert bad.status_code == 400 and json_body(bad)["errors"][0]["field"] == "topic"
    assert client.get("/v1/event/stream?index=-1").status_code == 400


def test_namespace_filter(client: FlaskClient) -> None:
    assert client.put("/v1/namespace/prod", json={"Name": "prod"}).status_code == 200
    register(client, minimal_job("web"))
    register(client, minimal_job("api", Namespace="prod"))
    done = heartbeats(3)
    assert {e["Namespace"] for e in events(read_frames(client, until=done))} == {"default"}
    assert {e["Key"] for e in events(read_frames(client, "namespace=prod&topic=Job", until=done))} == {"api"}
    assert {e["Key"] for e in events(read_frames(client, "namespace=*&topic=Job", until=done))} == {"web", "api"}


def test_heartbeats_keep_coming_while_nothing_happens(client: FlaskClient) -> None:
    frames = read_frames(client, until=heartbeats(4))
    assert frames == [{}, {}, {}, {}]


def test_resume_from_an_index_and_from_before_the_oldest_retained(client: FlaskClient, pg: Conn) -> None:
    indexes = [register(client, minimal_job(f"j{i}"))["Index"] for i in range(4)]
    done = heartbeats(3)
    resumed = read_frames(client, f"index={indexes[2]}&topic=Job", until=done)
    assert [e["Key"] for e in events(resumed)] == ["j2", "j3"]
    pg.execute("DELETE FROM events WHERE event_index < %s", (indexes[1],))  # as retention GC would
    # An index older than what is retained starts at the oldest event still kept (as Nomad).
    assert [e["Key"] for e in events(read_frames(client, "index=1&topic=Job", until=done))] == ["j1", "j2", "j3"]
    assert [e["Key"] for e in events(read_frames(client, "topic=Job", until=done))] == ["j1", "j2", "j3"]


def test_retention_gc_deletes_only_expired_events(client: FlaskClient, engine: Engine, pg: Conn) -> None:
    register(client, minimal_job("old"))
    pg.execute("UPDATE events SET created_at = now() - interval '2 hours'")
    register(client, minimal_job("new"))
    collect = event_gc.collector(Settings(event_retention_s=3600, gc_batch_size=1))  # batches of 10
    with Session(engine) as session, session.begin():
        assert collect(session) == 2  # the old job and its evaluation
    assert pg.execute("SELECT DISTINCT snapshot->>'job_id', topic FROM events ORDER BY 2").fetchall() == [
        ("new", "Evaluation"),
        (None, "Job"),
    ]
    kept = events(read_frames(client, "topic=Job", until=heartbeats(3)))
    assert [e["Key"] for e in kept] == ["new"]


def test_rolled_back_changes_publish_nothing(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job("web"))
    before = pg.execute("SELECT count(*) FROM events").fetchone()
    conflict = client.put("/v1/jobs", json={"Job": minimal_job("web"), "EnforceIndex": True, "JobModifyIndex": 999})
    assert conflict.status_code == 409
    with pg.transaction(force_rollback=True):
        pg.execute("INSERT INTO state_index (name, value) VALUES ('jobs', state_index_own())")
        pg.execute("UPDATE jobs SET modify_index = state_index_own()")
        assert pg.execute("SELECT count(*) FROM events").fetchone() != before  # written with the change...
    assert pg.execute("SELECT count(*) FROM events").fetchone() == before  # ...and gone with its rollback


def test_writes_that_take_no_index_publish_nothing(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job("web"))
    before = pg.execute("SELECT count(*) FROM events").fetchone()
    pg.execute("UPDATE evaluations SET lease_owner = 'someone'")  # a lease: no state index, no event
    assert pg.execute("SELECT count(*) FROM events").fetchone() == before


def test_a_second_write_of_a_row_in_one_transaction_is_one_event_with_the_last_state(
    client: FlaskClient, pg: Conn
) -> None:
    register(client, minimal_job("web"))
    with pg.transaction():
        index = pg.execute(
            "INSERT INTO state_index (name, value) VALUES ('jobs', state_index_own()) RETURNING value"
        ).fetchone()
        pg.execute("UPDATE jobs SET modify_index = %s, status_description = 'first'", index)
        pg.execute("UPDATE jobs SET status_description = 'second'")  # same index, same transaction
    assert index is not None
    found = events(read_frames(client, f"index={index[0]}", until=heartbeats(3)))
    assert [(e["Type"], e["Payload"]["Job"]["StatusDescription"]) for e in found] == [("JobRegistered", "second")]


@pytest.fixture
def acl_client(database_url: str) -> Iterator[FlaskClient]:
    app = create_app(Settings(database_url=database_url, acl_enabled=True, **SETTINGS), database_url)
    yield app.test_client()
    app.extensions["corral"].close()


def token(api: FlaskClient, root: str, name: str, rules: str) -> dict[str, str]:
    policy = api.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers={"X-Nomad-Token": root})
    assert policy.status_code == 200
    made = api.put(
        "/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers={"X-Nomad-Token": root}
    )
    assert made.status_code == 200
    return {"X-Nomad-Token": json_body(made)["SecretID"]}


def test_acl_topics_need_their_capability_and_other_namespaces_are_not_sent(acl_client: FlaskClient) -> None:
    api = acl_client
    root = json_body(api.post("/v1/acl/bootstrap"))["SecretID"]
    management = {"X-Nomad-Token": root}
    assert api.put("/v1/namespace/prod", json={"Name": "prod"}, headers=management).status_code == 200
    for job in (minimal_job("web"), minimal_job("api", Namespace="prod")):
        assert api.put("/v1/jobs", json={"Job": job}, headers=management).status_code == 200
    node_id = str(uuid.uuid4())
    assert api.put("/v1/node/register", json={"Node": node_body(node_id)}, headers=management).status_code == 200
    prod = token(api, root, "prod-reader", 'namespace "prod" { policy = "read" }')
    nodes = token(api, root, "node-reader", 'node { policy = "read" }')

    def status(query: str, headers: dict[str, str] | None) -> int:
        resp = api.get(f"/v1/event/stream?{query}", buffered=False, headers=headers or {})
        resp.close()
        return resp.status_code

    assert status("topic=Job", None) == 403  # anonymous, no anonymous policy
    assert status("topic=Job", prod) == 403  # read-job in prod only; the default namespace asked
    assert status("namespace=prod&topic=Node", prod) == 403  # no node:read
    assert status("namespace=prod", prod) == 403  # every topic ('*') needs a management token
    assert status("topic=Job&namespace=prod", nodes) == 403
    done = heartbeats(3)
    mine = events(read_frames(api, "namespace=prod&topic=Job&topic=Evaluation", until=done, headers=prod))
    assert {(e["Topic"], e["Namespace"]) for e in mine} == {("Job", "prod"), ("Evaluation", "prod")}
    # Every namespace: only the events of the namespaces the token may read are sent.
    wildcard = events(read_frames(api, "namespace=*&topic=Job", until=done, headers=prod))
    assert [e["Key"] for e in wildcard] == ["api"]
    assert [e["Key"] for e in events(read_frames(api, "topic=Node", until=done, headers=nodes))] == [node_id]
    everything = events(read_frames(api, "namespace=*", until=done, headers=management))
    assert {e["Topic"] for e in everything} == {"Job", "Evaluation", "Node"} and len(everything) == 5


def test_a_page_stops_at_the_safe_index_and_never_splits_an_index(engine: Engine, pg: Conn) -> None:
    for index, key in ((5, "a"), (7, "b"), (7, "c"), (7, "d"), (9, "e")):
        pg.execute(
            "INSERT INTO events (event_index, topic, type, key, namespace, snapshot) "
            "VALUES (%s, 'Job', 'JobRegistered', %s, 'default', '{}')",
            (index, key),
        )
    with Session(engine) as session, session.begin():
        # Index 9 may have company still to commit below it: not before the safe index passes it.
        held = event_store.page_after(session, 0, 8, 100)
        assert ([e.key for e in held.events], held.upto) == (["a", "b", "c", "d"], 8)
        # A page of one event still takes every event of the index it reached.
        small = event_store.page_after(session, 5, 9, 1)
        assert ([e.key for e in small.events], small.upto) == (["b", "c", "d"], 7)
        rest = event_store.page_after(session, small.upto, 9, 1)
        assert ([e.key for e in rest.events], rest.upto) == (["e"], 9)
        assert event_store.page_after(session, 9, 9, 1) == event_store.Page([], 9)


def test_variables_publish_their_metadata_without_items(client: FlaskClient) -> None:
    put = client.put("/v1/var/nomad/jobs/web", json={"Items": {"greeting": "hello"}})
    assert put.status_code == 200, put.get_data(as_text=True)
    assert client.put("/v1/var/nomad/jobs/web", json={"Items": {"greeting": "hi"}}).status_code == 200
    assert client.put("/v1/var/other", json={"Items": {"k": "v"}}).status_code == 200
    assert client.delete("/v1/var/nomad/jobs/web").status_code == 204
    found = events(read_frames(client, "topic=Variable:nomad/jobs/web", until=heartbeats(3)))
    assert [(e["Topic"], e["Type"], e["Key"], e["Namespace"]) for e in found] == [
        ("Variable", "VariableUpdated", "nomad/jobs/web", "default")
    ] * 3
    assert [e["Payload"]["Deleted"] for e in found] == [False, False, True]
    first = found[0]["Payload"]["Metadata"]
    assert first["Path"] == "nomad/jobs/web" and first["CreateIndex"] == first["ModifyIndex"] == put.json["ModifyIndex"]  # type: ignore[index]
    assert set(first) == {"Namespace", "Path", "CreateIndex", "CreateTime", "ModifyIndex", "ModifyTime"}
    assert found[1]["Payload"]["Metadata"]["ModifyIndex"] > first["ModifyIndex"]
    assert all("Items" not in e["Payload"] and "hello" not in str(e) for e in found)
    every = events(read_frames(client, "topic=Variable", until=heartbeats(3)))
    assert [e["Key"] for e in every] == ["nomad/jobs/web", "nomad/jobs/web", "other", "nomad/jobs/web"]


def test_variable_events_need_a_variables_rule_and_list_on_each_path(acl_client: FlaskClient) -> None:
    api = acl_client
    root = api.post("/v1/acl/bootstrap").json["SecretID"]  # type: ignore[index]
    management = {"X-Nomad-Token": root}
    for path in ("app/one", "secret/two"):
        assert api.put(f"/v1/var/{path}", json={"Items": {"k": "v"}}, headers=management).status_code == 200
    lister = token(
        api,
        root,
        "app-lister",
        'namespace "default" { variables { path "app/*" { capabilities = ["list"] } } }',
    )
    jobs_only = token(api, root, "job-reader", 'namespace "default" { policy = "read" }')
    refused = api.get("/v1/event/stream?topic=Variable", buffered=False, headers=jobs_only)
    refused.close()
    assert refused.status_code == 403  # read-job is not a variables capability
    seen = events(read_frames(api, "topic=Variable", until=heartbeats(3), headers=lister))
    assert [e["Key"] for e in seen] == ["app/one"]  # secret/two is filtered out per event
    assert len(events(read_frames(api, "topic=Variable", until=heartbeats(3), headers=management))) == 2
