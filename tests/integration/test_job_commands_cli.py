"""`job promote|eval|start|scaling-events|restart`, `job dispatch` with Nomad's positional
payload, `namespace inspect`, `config validate` and `operator api`, against the API in-process."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register
from tests.support.rows import (
    Conn,
    deployed_alloc,
    group_state,
    insert_allocation,
    insert_deployment,
    insert_node,
    scalar,
)

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str, input: str | bytes | None = None, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input, env=env)


def test_promote_promotes_the_latest_deployment(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    register(client, minimal_job())
    nothing = run("job", "promote", "-detach", "web")
    assert nothing.exit_code == 1 and 'Job "web" has no deployment to promote' in nothing.output
    eval_id = scalar(pg, "SELECT id FROM evaluations")
    groups = {"g": group_state(DesiredCanaries=1)}
    deployment = insert_deployment(pg, groups=groups, description="Deployment is running but requires manual promotion")
    deployed_alloc(pg, insert_node(pg), str(eval_id), deployment, healthy=True, canary=True)
    promoted = run("job", "promote", "-detach", "web")
    assert promoted.exit_code == 0, promoted.output
    assert promoted.output.startswith("Evaluation ID: ")
    assert ("POST", f"/v1/deployment/promote/{deployment}", {"DeploymentID": deployment, "All": True}) in sent
    assert client.get(f"/v1/deployment/{deployment}").get_json()["TaskGroups"]["g"]["Promoted"] is True


def test_eval_creates_an_evaluation_and_start_restarts_a_stopped_job(client: FlaskClient) -> None:
    register(client, minimal_job())
    created = run("job", "eval", "-detach", "-force-reschedule", "web")
    assert created.exit_code == 0, created.output
    short = created.output.split('"')[1]
    assert created.output == f'Created eval ID: "{short}" \n' and len(short) == 8
    evals = client.get("/v1/job/web/evaluations").get_json()
    assert len(evals) == 2 and any(e["ID"].startswith(short) for e in evals)

    running = run("job", "start", "-detach", "web")
    assert running.exit_code == 1 and 'Job "web" has not been stopped' in running.output
    client.delete("/v1/job/web")
    started = run("job", "start", "-detach", "web")
    assert started.exit_code == 0, started.output
    assert started.output.startswith("Job start successful\nEvaluation ID: ")
    found = client.get("/v1/job/web").get_json()
    assert found["Stop"] is False and found["Version"] == 2


def test_scaling_events_newest_first(client: FlaskClient) -> None:
    register(client, minimal_job(TaskGroups=[{**minimal_job()["TaskGroups"][0], "Scaling": {"Min": 0, "Max": 9}}]))
    assert run("job", "scaling-events", "web").output == "No events found\n"
    for count in (3, 5):
        answer = client.post("/v1/job/web/scale", json={"Count": count, "Target": {"Group": "g"}, "Message": "m"})
        assert answer.status_code == 200, answer.get_data(as_text=True)
    listed = run("job", "scaling-events", "web")
    assert listed.exit_code == 0, listed.output
    lines = listed.output.splitlines()
    assert lines[0].split() == ["Task", "Group", "Count", "PrevCount", "Date"]
    assert [line.split()[:3] for line in lines[1:]] == [["g", "5", "3"], ["g", "3", "2"]]
    verbose = run("job", "scaling-events", "-verbose", "web")
    assert verbose.output.splitlines()[0].split()[4:8] == ["Error", "Message", "Eval", "ID"]


def test_restart_restarts_each_running_allocation(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    eval_id = register(client, minimal_job())["EvalID"]
    assert run("job", "restart", "-yes", "web").output == "No allocations to restart\n"
    alloc = insert_allocation(pg, insert_node(pg), eval_id)
    # Nomad's default -on-error is `ask`: without a terminal it needs -yes or -on-error fail.
    refused = run("job", "restart", "web")
    assert refused.exit_code == 2 and 'Invalid -on-error value "ask"' in refused.output
    assert not [call for call in sent if call[1].endswith("/restart")]
    tried = run("job", "restart", "-yes", "-task", "t", "web")
    # No node agent answers in this test: the restart is sent, its failure reported with exit 1.
    assert ("PUT", f"/v1/client/allocation/{alloc}/restart", {"TaskName": "t", "AllTasks": False}) in sent
    assert f'Restarting task "t" in allocation "{alloc[:8]}" for group "g"' in tried.output
    assert tried.exit_code == 1 and f'* Error restarting allocation "{alloc[:8]}"' in tried.output
    assert "1 error occurred while restarting job" in tried.output


def test_dispatch_takes_the_payload_as_a_positional_file_or_stdin(client: FlaskClient, tmp_path: Path) -> None:
    register(client, minimal_job("render", Type="batch", ParameterizedJob={"Payload": "required"}))
    payload = tmp_path / "input.txt"
    payload.write_bytes(b"frame 1")
    from_file = run("job", "dispatch", "-detach", "render", str(payload))
    assert from_file.exit_code == 0, from_file.output
    child = from_file.output.split("= ")[1].splitlines()[0]
    assert base64.b64decode(client.get(f"/v1/job/{child}").get_json()["Payload"]) == b"frame 1"
    from_stdin = run("job", "dispatch", "-detach", "render", "-", input=b"frame 2")
    child = from_stdin.output.split("= ")[1].splitlines()[0]
    assert base64.b64decode(client.get(f"/v1/job/{child}").get_json()["Payload"]) == b"frame 2"
    both = run("job", "dispatch", "-payload-file", str(payload), "render", str(payload))
    assert both.exit_code == 2 and "not both" in both.output


def test_dispatch_with_an_idempotency_token_dispatches_once(client: FlaskClient) -> None:
    register(client, minimal_job("render", Type="batch", Priority=40, ParameterizedJob={}))
    args = ("job", "dispatch", "-detach", "-idempotency-token", "once", "-id-prefix-template", "nightly")
    first = run(*args, "-priority", "70", "render")
    assert first.exit_code == 0, first.output
    child = first.output.split("= ")[1].splitlines()[0]
    assert child.startswith("render/dispatch-nightly-") and "Evaluation ID" in first.output
    again = run(*args, "render")
    assert again.exit_code == 0, again.output
    assert again.output == f"Dispatched Job ID = {child}\n"  # the same child, no evaluation to monitor
    found = client.get(f"/v1/job/{child}").get_json()
    assert (found["DispatchIdempotencyToken"], found["Priority"]) == ("once", 70)
    assert run("job", "dispatch", "-priority", "0", "render").exit_code == 2


def test_namespace_inspect_prints_the_namespace(client: FlaskClient) -> None:
    client.put("/v1/namespace/team-a", json={"Name": "team-a", "Description": "A team"})
    shown = run("namespace", "inspect", "team-a")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["Description"] == "A team"
    assert run("namespace", "inspect", "-t", "{{.Name}}: {{.Description}}", "team-a").output == "team-a: A team"
    assert run("namespace", "inspect", "nope").exit_code == 1


def test_config_validate_checks_node_agent_files_and_the_environment(tmp_path: Path) -> None:
    good = tmp_path / "good"
    good.mkdir()
    (good / "client.json").write_text(json.dumps({"datacenter": "dc2", "gc": {"interval": "1m"}}))
    valid = run("config", "validate", str(good), env={"CORRAL_BIND": "127.0.0.1:4646"})
    assert valid.exit_code == 0, valid.output
    assert valid.output == "Configuration is valid!\n"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"datacentre": "dc2"}))
    refused = run("config", "validate", str(good), str(bad))
    assert refused.exit_code == 1
    assert f"{bad}: unknown client setting(s): datacentre" in refused.output
    environment = run("config", "validate", env={"CORRAL_NUM_SCHEDULERS": "many"})
    assert environment.exit_code == 1, environment.output
    assert "environment: CORRAL_NUM_SCHEDULERS" in environment.output


def test_operator_api_sends_the_clis_namespace_and_prints_the_body(client: FlaskClient, sent: list[Any]) -> None:
    client.put("/v1/namespace/team-a", json={"Name": "team-a"})
    register(client, minimal_job("a", Namespace="team-a"))
    register(client, minimal_job("b"))
    listed = run("operator", "api", "-X", "GET", "-namespace", "team-a", "/v1/jobs")
    assert listed.exit_code == 0, listed.output
    assert [j["ID"] for j in json.loads(listed.output)] == ["a"]
    body = json.dumps({"Job": minimal_job("c")})
    posted = run("operator", "api", "/v1/jobs", input=body)
    assert posted.exit_code == 0, posted.output
    assert "EvalID" in json.loads(posted.output) and client.get("/v1/job/c").status_code == 200
    missing = run("operator", "api", "-X", "GET", "/v1/job/nope")
    assert missing.exit_code == 0, missing.output  # Nomad's: an answer came, whatever its status
    assert json.loads(missing.output)["status"] == 404
    dry = run("operator", "api", "-X", "DELETE", "-dryrun", "-H", "X-Test: 1", "/v1/job/c?purge=true")
    assert dry.exit_code == 0
    assert dry.output.strip() == "curl -X DELETE -H 'X-Test: 1' 'http://corral.test/v1/job/c?purge=true'"
    assert client.get("/v1/job/c").status_code == 200
