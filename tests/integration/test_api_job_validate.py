"""Job file input paths over HTTP: validate, parse errors with positions, warnings, unsafe names."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.support.api import json_body, minimal_job

pytestmark = pytest.mark.integration


def _with_group(**fields: Any) -> dict[str, Any]:
    job = minimal_job()
    job["TaskGroups"][0].update(fields)
    return job


def test_validate_a_valid_job(client: FlaskClient) -> None:
    resp = client.post("/v1/validate/job", json={"Job": minimal_job()})
    assert resp.status_code == 200, resp.json
    assert resp.json == {"DriverConfigValidated": False, "ValidationErrors": [], "Error": "", "Warnings": ""}
    assert client.get("/v1/jobs").json == []  # nothing registered


def test_validate_reports_every_problem_in_nomads_shape(client: FlaskClient) -> None:
    job = _with_group(Count=-1, MaxClientDisconnect="soon")
    resp = client.put("/v1/validate/job", json={"Job": job})
    assert resp.status_code == 200
    body = resp.json
    assert body is not None
    fields = [line.split(":")[0] for line in body["ValidationErrors"]]
    assert "Job.TaskGroups[0].Count" in fields and "Job.TaskGroups[0].MaxClientDisconnect" in fields
    assert body["Error"] and body["DriverConfigValidated"] is False
    assert client.post("/v1/validate/job", json={}).status_code == 400


def test_plan_of_group_max_client_disconnect_string_succeeds(client: FlaskClient) -> None:
    # Before: accepted as "1h", and `job plan` answered 500 (ValueError in the scheduler).
    job = _with_group(MaxClientDisconnect="1h")
    resp = client.post("/v1/job/web/plan", json={"Job": job})
    assert resp.status_code == 200, resp.json
    assert client.put("/v1/jobs", json={"Job": job}).status_code == 200
    stored = client.get("/v1/job/web").json
    assert stored is not None and stored["TaskGroups"][0]["MaxClientDisconnect"] == 3600 * 10**9


@pytest.mark.parametrize("name", ["../../tmp/x", "a/b", "a\\b", "nul\x00"])
def test_unsafe_task_names_are_refused_naming_the_field(client: FlaskClient, name: str) -> None:
    job = minimal_job()
    job["TaskGroups"][0]["Tasks"][0]["Name"] = name
    resp = client.put("/v1/jobs", json={"Job": job})
    assert resp.status_code == 400
    assert "Job.TaskGroups[0].Tasks[0].Name" in str(resp.json)
    assert client.get("/v1/jobs").json == []


def test_register_and_plan_warn_about_blocks_corral_keeps_but_ignores(client: FlaskClient) -> None:
    job = _with_group(Services=[{"Name": "web"}])
    job["TaskGroups"][0]["Tasks"][0]["Templates"] = [{"EmbeddedTmpl": "x", "DestPath": "local/x"}]
    for resp in (client.post("/v1/job/web/plan", json={"Job": job}), client.put("/v1/jobs", json={"Job": job})):
        assert resp.status_code == 200, resp.json
        warnings = json_body(resp)["Warnings"]
        assert "service block" in warnings and "template block" not in warnings  # the client renders templates
    stored = client.get("/v1/job/web").json
    assert stored is not None
    service = stored["TaskGroups"][0]["Services"][0]  # kept, in Nomad's canonical form
    assert (service["Name"], service["Provider"]) == ("web", "consul")


def test_parse_reports_typos_with_position(client: FlaskClient) -> None:
    hcl = 'job "j" {\n  group "g" {\n    cout = 3\n    task "t" {\n      driver = "mock"\n    }\n  }\n}\n'
    resp = client.post("/v1/jobs/parse", json={"JobHCL": hcl})
    assert resp.status_code == 400
    assert "job.hcl:3:5" in str(resp.json) and "count" in str(resp.json)


def test_parse_takes_variables_and_refuses_file(client: FlaskClient) -> None:
    hcl = (
        'variable "n" {\n  type = number\n}\n'
        'job "j" {\n  group "g" {\n    count = var.n\n    task "t" {\n      driver = "mock"\n    }\n  }\n}\n'
    )
    resp = client.post("/v1/jobs/parse", json={"JobHCL": hcl, "Variables": "n = 3\n"})
    assert resp.status_code == 200, resp.json
    assert json_body(resp)["TaskGroups"][0]["Count"] == 3
    with_file = 'job "j" {\n  meta {\n    a = file("/etc/passwd")\n  }\n}\n'
    resp = client.post("/v1/jobs/parse", json={"JobHCL": with_file})
    assert resp.status_code == 400 and "file() is not available" in str(resp.json)


WRONG_TYPES: list[tuple[tuple[Any, ...], dict[str, Any], str]] = [
    ((), {"TaskGroups": 5}, "Job.TaskGroups"),
    ((), {"TaskGroups": [7]}, "Job.TaskGroups[0]"),
    ((), {"Meta": ["a"]}, "Job.Meta"),
    (("TaskGroups", 0), {"Tasks": "web"}, "Job.TaskGroups[0].Tasks"),
    (("TaskGroups", 0), {"Tasks": [None]}, "Job.TaskGroups[0].Tasks[0]"),
    (("TaskGroups", 0, "Tasks", 0), {"Resources": [1]}, "Job.TaskGroups[0].Tasks[0].Resources"),
]


def test_a_wrong_json_type_is_named_by_validate_register_and_plan(client: FlaskClient) -> None:
    """/v1/validate/job read the warnings off the raw spec and answered 500 to TaskGroups: 5."""
    for where, value, field in WRONG_TYPES:
        job = minimal_job("typed")
        target: Any = job
        for step in where:
            target = target[step]
        target.update(value)
        validated = client.put("/v1/validate/job", json={"Job": job})
        assert validated.status_code == 200, (field, validated.get_data(as_text=True))
        assert any(line.startswith(f"{field}:") for line in json_body(validated)["ValidationErrors"]), validated.json
        for url in ("/v1/jobs", "/v1/job/typed/plan"):
            refused = client.put(url, json={"Job": job})
            assert refused.status_code == 400, (url, refused.get_data(as_text=True))
            assert field in [e["field"] for e in json_body(refused)["errors"]], (url, refused.json)
    assert client.get("/v1/jobs").json == []
