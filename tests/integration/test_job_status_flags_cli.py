"""`job status -short|-evals|-json|-t`, periodic and parameterized jobs in `job status`,
`job inspect -version|-json|-t`, `job stop -yes` and Nomad's top-level shortcuts, against the
API in-process."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_short_prints_only_the_key_value_block(client: FlaskClient) -> None:
    register(client, minimal_job())
    shown = run("job", "status", "-short", "web")
    assert shown.exit_code == 0, shown.output
    assert shown.output.splitlines()[0] == "ID            = web"
    assert shown.output.splitlines()[-1] == "Parameterized = false"
    assert "Summary" not in shown.output and "Allocations" not in shown.output


def test_evals_adds_the_evaluations_section(client: FlaskClient) -> None:
    eval_id = register(client, minimal_job())["EvalID"]
    plain = run("job", "status", "web")
    assert "Evaluations" not in plain.output
    shown = run("job", "status", "-evals", "web")
    assert shown.exit_code == 0, shown.output
    section = shown.output[shown.output.index("\nEvaluations\n") :].splitlines()
    assert section[2].split() == ["ID", "Priority", "Triggered", "By", "Status", "Placement", "Failures"]
    assert section[3].split()[:4] == [eval_id[:8], "50", "job-register", "pending"]


def test_json_and_template_format_nomads_job_status_object(client: FlaskClient) -> None:
    eval_id = register(client, minimal_job())["EvalID"]
    one = run("job", "status", "-json", "web")
    assert one.exit_code == 0, one.output
    [found] = json.loads(one.output)
    assert set(found) == {"Summary", "Allocations", "LatestDeployment", "Evaluations"}
    assert found["Summary"]["JobID"] == "web" and found["Evaluations"][0]["ID"] == eval_id
    listed = run("job", "status", "-json")
    assert [j["Summary"]["JobID"] for j in json.loads(listed.output)] == ["web"]
    templated = run("job", "status", "-t", "{{range .}}{{.Summary.JobID}}{{end}}", "web")
    assert templated.exit_code == 0 and templated.output == "web"
    both = run("job", "status", "-json", "-t", "x", "web")
    assert both.exit_code == 2


def test_periodic_job_shows_next_launch_and_its_children(client: FlaskClient) -> None:
    register(client, minimal_job("nightly", Type="batch", Periodic={"Spec": "0 3 * * *"}))
    shown = run("job", "status", "nightly")
    assert shown.exit_code == 0, shown.output
    assert re.search(r"Next Periodic Launch = \d{4}-\d\d-\d\dT03:00:00Z \((\d+h)?(\d+m)?\d+s from now\)", shown.output)
    assert "Children Job Summary\nPending  Running  Dead\n0        0        0" in shown.output
    assert shown.output.rstrip().endswith("No instances of periodic job found")
    forced = client.post("/v1/job/nightly/periodic/force")
    assert forced.status_code == 200, forced.get_data(as_text=True)
    shown = run("job", "status", "nightly")
    section = shown.output[shown.output.index("Previously Launched Jobs") :].splitlines()
    assert section[1].split() == ["ID", "Status"]
    assert section[2].startswith("nightly/periodic-")
    client.delete("/v1/job/nightly")
    assert "Next Periodic Launch = none (job stopped)" in run("job", "status", "nightly").output


def test_parameterized_job_shows_its_dispatched_jobs(client: FlaskClient) -> None:
    spec = minimal_job("render", Type="batch", ParameterizedJob={"Payload": "forbidden", "MetaRequired": ["frame"]})
    register(client, spec)
    shown = run("job", "status", "render")
    assert shown.exit_code == 0, shown.output
    assert "Parameterized Job\nPayload           = forbidden\nRequired Metadata = frame\n" in shown.output
    assert "Parameterized Job Summary" in shown.output
    assert shown.output.rstrip().endswith("No dispatched instances of parameterized job found")
    child = client.post("/v1/job/render/dispatch", json={"Meta": {"frame": "1"}}).get_json()["DispatchedJobID"]
    shown = run("job", "status", "render")
    section = shown.output[shown.output.index("Dispatched Jobs") :].splitlines()
    assert section[2].split()[0] == child


def test_inspect_a_version_as_json_or_through_a_template(client: FlaskClient) -> None:
    register(client, minimal_job())
    register(client, minimal_job(Priority=70))
    wrapped = json.loads(run("job", "inspect", "web").output)
    assert wrapped["Job"]["Priority"] == 70
    old = run("job", "inspect", "-version", "0", "-json", "web")
    assert old.exit_code == 0, old.output
    assert json.loads(old.output)["Priority"] == 50 and json.loads(old.output)["Version"] == 0
    assert run("inspect", "-t", "{{.Priority}}", "web").output == "70"
    missing = run("job", "inspect", "-version", "9", "web")
    assert missing.exit_code == 1 and "has no version 9" in missing.output


def test_stop_takes_yes_and_the_shortcuts_are_the_job_and_alloc_commands(client: FlaskClient) -> None:
    register(client, minimal_job())
    stopped = run("stop", "-yes", "-detach", "web")
    assert stopped.exit_code == 0, stopped.output
    assert client.get("/v1/job/web").get_json()["Stop"] is True
    for name, group in (("run", "job"), ("plan", "job"), ("logs", "alloc"), ("exec", "alloc"), ("fs", "alloc")):
        top = run(name, "--help")
        assert top.exit_code == 0
        assert top.output.split("\n\n", 1)[1] == run(group, name, "--help").output.split("\n\n", 1)[1]
