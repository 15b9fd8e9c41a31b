"""Jobs over HTTP: register, check-and-set, stop, purge, versions, summary, and bad input."""

from __future__ import annotations

import psycopg
import pytest
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job

pytestmark = pytest.mark.integration

Conn = psycopg.Connection[tuple[object, ...]]


def row_counts(pg: Conn) -> tuple[object, ...]:
    row = pg.execute(
        "SELECT (SELECT count(*) FROM jobs), (SELECT count(*) FROM job_versions), "
        "(SELECT count(*) FROM evaluations), (SELECT max(value) FROM state_index)"
    ).fetchone()
    assert row is not None
    return row


def test_register_returns_eval_visible_in_api_and_psql_view(client: FlaskClient, pg: Conn) -> None:
    resp = client.put("/v1/jobs", json={"Job": minimal_job()})
    assert resp.status_code == 200, resp.json
    body = resp.json
    assert body is not None and body["EvalID"] and body["JobModifyIndex"] == body["EvalCreateIndex"]
    assert resp.headers["X-Nomad-Index"] == str(body["Index"])

    evaluation = client.get(f"/v1/evaluation/{body['EvalID']}").json
    assert evaluation is not None
    assert (evaluation["JobID"], evaluation["TriggeredBy"], evaluation["Status"]) == ("web", "job-register", "pending")
    queued = pg.execute("SELECT id::text, job_id, state FROM v_eval_queue").fetchall()
    assert queued == [(body["EvalID"], "web", "ready")]


def test_register_fills_defaults_and_reads_back(client: FlaskClient) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job()})
    job = client.get("/v1/job/web").json
    assert job is not None
    assert job["Type"] == "service" and job["Priority"] == 50 and job["Namespace"] == "default"
    assert job["Version"] == 0 and job["Status"] == "pending" and job["Stop"] is False
    assert job["TaskGroups"][0]["Tasks"][0]["Resources"]["CPU"] == 100


def test_malformed_spec_names_the_field_and_writes_nothing(client: FlaskClient, pg: Conn) -> None:
    before = row_counts(pg)
    bad = minimal_job(Priority=500)
    bad["TaskGroups"][0]["Tasks"][0]["Driver"] = ""
    resp = client.put("/v1/jobs", json={"Job": bad})
    assert resp.status_code == 400
    assert resp.content_type == "application/problem+json"
    fields = {e["field"] for e in json_body(resp)["errors"]}
    assert {"Job.Priority", "Job.TaskGroups[0].Tasks[0].Driver"} <= fields
    assert row_counts(pg) == before


@pytest.mark.parametrize(
    ("payload", "field"),
    [
        ("not json at all", "body"),
        ([1, 2], "body"),
        ({"NotJob": {}}, "Job"),
        ({"Job": minimal_job(), "EnforceIndex": "yes"}, "EnforceIndex"),
        ({"Job": minimal_job(), "JobModifyIndex": -1}, "JobModifyIndex"),
        ({"Job": minimal_job(), "EvalPriority": 101}, "EvalPriority"),
        ({"Job": minimal_job(Namespace="nope")}, "Job.Namespace"),
        ({"Job": minimal_job(NodePool="gpu")}, "Job.NodePool"),
    ],
)
def test_bad_register_requests_get_400_naming_the_field(
    client: FlaskClient, pg: Conn, payload: object, field: str
) -> None:
    before = row_counts(pg)
    if isinstance(payload, str):
        resp = client.put("/v1/jobs", data=payload, content_type="application/json")
    else:
        resp = client.put("/v1/jobs", json=payload)
    assert resp.status_code == 400, resp.json
    assert field in [e["field"] for e in json_body(resp)["errors"]]
    assert row_counts(pg) == before


def test_reregistering_unchanged_spec_keeps_version_but_creates_eval(client: FlaskClient, pg: Conn) -> None:
    first = client.put("/v1/jobs", json={"Job": minimal_job()}).json
    second = client.put("/v1/jobs", json={"Job": minimal_job()}).json
    assert first is not None and second is not None
    assert second["EvalID"] != first["EvalID"]
    assert second["JobModifyIndex"] == first["JobModifyIndex"]
    assert pg.execute("SELECT count(*) FROM job_versions").fetchone() == (1,)
    changed = client.put("/v1/jobs", json={"Job": minimal_job(Priority=70)}).json
    assert changed is not None and changed["JobModifyIndex"] > first["JobModifyIndex"]
    versions = client.get("/v1/job/web/versions").json
    assert versions is not None
    assert [v["Version"] for v in versions["Versions"]] == [1, 0]
    assert versions["Versions"][0]["Priority"] == 70


def test_server_fields_sent_back_are_ignored(client: FlaskClient) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job()})
    read_back = client.get("/v1/job/web").json
    assert read_back is not None
    read_back["Version"] = 99
    again = client.put("/v1/jobs", json={"Job": read_back})
    assert again.status_code == 200, again.json
    job = client.get("/v1/job/web").json
    assert job is not None and job["Version"] == 0


def test_enforce_index_check_and_set(client: FlaskClient) -> None:
    created = client.put("/v1/jobs", json={"Job": minimal_job(), "EnforceIndex": True, "JobModifyIndex": 0})
    assert created.status_code == 200
    again = client.put("/v1/jobs", json={"Job": minimal_job(), "EnforceIndex": True, "JobModifyIndex": 0})
    assert again.status_code == 409
    assert json_body(again)["errors"][0]["field"] == "JobModifyIndex"
    index = json_body(created)["JobModifyIndex"]
    stale = client.put(
        "/v1/jobs", json={"Job": minimal_job(Priority=60), "EnforceIndex": True, "JobModifyIndex": index + 1}
    )
    assert stale.status_code == 409
    ok = client.put("/v1/jobs", json={"Job": minimal_job(Priority=60), "EnforceIndex": True, "JobModifyIndex": index})
    assert ok.status_code == 200


def test_update_url_must_match_job_id(client: FlaskClient) -> None:
    resp = client.post("/v1/job/other", json={"Job": minimal_job()})
    assert resp.status_code == 400
    assert json_body(resp)["errors"][0]["field"] == "Job.ID"
    assert client.post("/v1/job/web", json={"Job": minimal_job()}).status_code == 200


def test_stop_creates_deregister_eval_and_new_version(client: FlaskClient, pg: Conn) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job()})
    stopped = client.delete("/v1/job/web").json
    assert stopped is not None and stopped["EvalID"]
    job = client.get("/v1/job/web").json
    # Pending while evaluations are still to be worked on (as Nomad), dead once they are done.
    assert job is not None and job["Stop"] is True and job["Version"] == 1 and job["Status"] == "pending"
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE job_id = 'web'")
    assert json_body(client.get("/v1/job/web"))["Status"] == "dead"
    evaluation = client.get(f"/v1/evaluation/{stopped['EvalID']}").json
    assert evaluation is not None and evaluation["TriggeredBy"] == "job-deregister"


def test_purge_hides_job_but_keeps_eval(client: FlaskClient, pg: Conn) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job()})
    purged = client.delete("/v1/job/web?purge=true").json
    assert purged is not None and purged["EvalID"]
    assert client.get("/v1/job/web").status_code == 404
    assert client.get("/v1/jobs").json == []
    assert pg.execute("SELECT count(*) FROM evaluations WHERE job_id = 'web'").fetchone() == (2,)
    assert client.delete("/v1/job/web").status_code == 404
    revived = client.put("/v1/jobs", json={"Job": minimal_job()})
    assert revived.status_code == 200
    job = client.get("/v1/job/web").json
    assert job is not None and job["Stop"] is False


def test_unknown_job_is_404_with_json(client: FlaskClient) -> None:
    resp = client.get("/v1/job/missing")
    assert resp.status_code == 404
    assert json_body(resp)["errors"][0]["field"] == "JobID"
    assert client.get("/v1/job/missing/versions").status_code == 404
    assert client.get("/v1/nothing-here").status_code == 404


def test_list_filters_by_prefix_and_namespace(client: FlaskClient, pg: Conn) -> None:
    pg.execute("INSERT INTO namespaces (name, create_index, modify_index) VALUES ('prod', 1, 1)")
    for job_id in ("api-1", "api-2", "batchy"):
        client.put("/v1/jobs", json={"Job": minimal_job(job_id)})
    client.put("/v1/jobs?namespace=prod", json={"Job": minimal_job("api-3")})
    assert [j["ID"] for j in json_body(client.get("/v1/jobs?prefix=api"))] == ["api-1", "api-2"]
    assert [j["ID"] for j in json_body(client.get("/v1/jobs?namespace=prod"))] == ["api-3"]
    assert len(json_body(client.get("/v1/jobs?namespace=*"))) == 4
    stub = json_body(client.get("/v1/jobs?prefix=batchy"))[0]
    assert stub["JobSummary"]["Summary"]["g"]["Running"] == 0


def test_summary_counts_allocations_by_client_status(client: FlaskClient, pg: Conn) -> None:
    from tests.support.rows import insert_allocation, insert_node

    body = client.put("/v1/jobs", json={"Job": minimal_job()}).json
    assert body is not None
    node_id = insert_node(pg)
    insert_allocation(pg, node_id, body["EvalID"], client_status="running")
    insert_allocation(pg, node_id, body["EvalID"], client_status="failed")
    summary = client.get("/v1/job/web/summary").json
    assert summary is not None
    assert summary["Summary"]["g"]["Running"] == 1 and summary["Summary"]["g"]["Failed"] == 1
    allocs = client.get("/v1/job/web/allocations").json
    assert allocs is not None and len(allocs) == 2


def test_reject_job_registration_is_403(client: FlaskClient, pg: Conn) -> None:
    pg.execute("UPDATE scheduler_config SET reject_job_registration = true")
    resp = client.put("/v1/jobs", json={"Job": minimal_job()})
    assert resp.status_code == 403
    assert pg.execute("SELECT count(*) FROM jobs").fetchone() == (0,)


def test_periodic_job_registers_without_eval(client: FlaskClient, pg: Conn) -> None:
    job = minimal_job("nightly", Type="batch", Periodic={"Spec": "0 3 * * *"})
    body = client.put("/v1/jobs", json={"Job": job}).json
    assert body is not None and body["EvalID"] == ""
    assert pg.execute("SELECT count(*) FROM evaluations").fetchone() == (0,)


def test_parse_hcl(client: FlaskClient) -> None:
    hcl = 'job "cache" {\n  group "g" {\n    task "redis" {\n      driver = "mock"\n    }\n  }\n}\n'
    resp = client.post("/v1/jobs/parse", json={"JobHCL": hcl, "Canonicalize": True})
    assert resp.status_code == 200, resp.json
    assert json_body(resp)["ID"] == "cache" and json_body(resp)["Priority"] == 50
    bad = client.post("/v1/jobs/parse", json={"JobHCL": "job {"})
    assert bad.status_code == 400


def test_job_ids_with_slashes_and_children_counts(client: FlaskClient, pg: Conn) -> None:
    client.put("/v1/jobs", json={"Job": minimal_job("nightly", Type="batch", Periodic={"Spec": "0 3 * * *"})})
    child = minimal_job("nightly/periodic-1795000000", Type="batch", ParentID="nightly")
    assert client.put("/v1/jobs", json={"Job": child}).status_code == 200
    assert json_body(client.get("/v1/job/nightly/periodic-1795000000"))["ParentID"] == "nightly"
    assert client.get("/v1/job/nightly%2Fperiodic-1795000000/versions").status_code == 200
    stub = next(j for j in json_body(client.get("/v1/jobs")) if j["ID"] == "nightly")
    assert stub["JobSummary"]["Children"] == {"Pending": 1, "Running": 0, "Dead": 0}
    assert json_body(client.get("/v1/job/nightly/summary"))["Children"]["Pending"] == 1


def test_status_is_derived_from_allocations_and_evaluations(
    client: FlaskClient, pg: psycopg.Connection[tuple[object, ...]]
) -> None:
    from tests.support.rows import insert_allocation, insert_node

    def status(job_id: str = "web") -> str:
        body = client.get(f"/v1/job/{job_id}").json
        assert body is not None
        listed = {j["ID"]: j["Status"] for j in client.get("/v1/jobs").json or []}
        assert listed[job_id] == body["Status"]
        return str(body["Status"])

    registered = client.put("/v1/jobs", json={"Job": minimal_job()}).json
    assert registered is not None
    assert status() == "pending"  # its evaluation is still to be worked on
    node = insert_node(pg)
    alloc = insert_allocation(pg, node, registered["EvalID"])
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (registered["EvalID"],))
    assert status() == "running"
    pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (alloc,))
    assert status() == "dead"
    system = minimal_job("sys", Type="system")
    assert client.put("/v1/jobs", json={"Job": system}).status_code == 200
    assert status("sys") == "running"  # system jobs run until stopped
    assert client.delete("/v1/job/sys").status_code == 200
    assert status("sys") == "dead"


def test_a_job_source_over_job_max_source_size_is_discarded_with_a_warning(database_url: str) -> None:
    app = create_app(Settings(database_url=database_url, job_max_source_size=100), database_url)
    client = app.test_client()
    try:
        small = {"Source": 'job "web" {}', "Format": "hcl2", "VariableFlags": {"n": "1"}}
        resp = client.put("/v1/jobs", json={"Job": minimal_job("small"), "Submission": small})
        assert resp.status_code == 200, resp.json
        assert resp.json is not None and resp.json["Warnings"] == ""
        # As Nomad does: the source is dropped, the job registers, the answer says why.
        big = {"Source": "x" * 80, "Variables": "y" * 10, "VariableFlags": {"name": "z" * 20}}
        resp = client.put("/v1/jobs", json={"Job": minimal_job("big"), "Submission": big})
        assert resp.status_code == 200, resp.json
        assert resp.json is not None
        assert "job_max_source_size" in resp.json["Warnings"] and "114 bytes" in resp.json["Warnings"]
        assert client.get("/v1/job/big").status_code == 200
        bad = client.put("/v1/jobs", json={"Job": minimal_job("bad"), "Submission": {"Source": 7}})
        assert bad.status_code == 400
        assert bad.json is not None and "Submission.Source" in bad.json["detail"]
        assert client.get("/v1/job/bad").status_code == 404
    finally:
        app.extensions["corral"].close()
