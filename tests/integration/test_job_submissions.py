"""Job submissions: the source sent with a registration is kept with the version it made and
served by GET /v1/job/:id/submission?version=N; `job run` sends it as Nomad's CLI does and
`job inspect -hcl` prints it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from app.cli.jobs.job_source import job_submission
from tests.support.api import minimal_job
from tests.support.rows import Conn

pytestmark = pytest.mark.integration
HCL = (
    'variable "count" {\n  default = 1\n}\n\n'
    'job "web" {\n  group "g" {\n    count = var.count\n    task "t" {\n      driver = "mock"\n    }\n  }\n}\n'
)


def put(client: FlaskClient, job: dict[str, Any], submission: dict[str, Any] | None) -> None:
    body: dict[str, Any] = {"Job": job} if submission is None else {"Job": job, "Submission": submission}
    resp = client.put("/v1/jobs", json=body)
    assert resp.status_code == 200, resp.get_data(as_text=True)


def test_each_version_keeps_the_source_it_was_submitted_with(client: FlaskClient) -> None:
    first = {"Source": 'job "web" {}', "Format": "hcl2", "VariableFlags": {"n": "1"}, "Variables": "a = 1"}
    put(client, minimal_job(), first)
    put(client, minimal_job(Meta={"v": "2"}), {"Source": '{"ID": "web"}', "Format": "json"})
    put(client, minimal_job(Meta={"v": "3"}), None)
    shown = client.get("/v1/job/web/submission?version=0")
    assert shown.status_code == 200
    assert shown.json == {
        "Source": 'job "web" {}',
        "Format": "hcl2",
        "VariableFlags": {"n": "1"},
        "Variables": "a = 1",
        "Namespace": "default",
        "JobID": "web",
        "Version": 0,
        "JobModifyIndex": shown.json["JobModifyIndex"],  # type: ignore[index]
    }
    assert int(shown.headers["X-Nomad-Index"]) > 0
    second = client.get("/v1/job/web/submission?version=1").json
    assert second is not None and (second["Source"], second["Format"], second["VariableFlags"]) == (
        '{"ID": "web"}',
        "json",
        None,
    )
    none = client.get("/v1/job/web/submission?version=2")  # registered without a source
    assert none.status_code == 404 and "job source not found" in none.get_data(as_text=True)
    assert client.get("/v1/job/web/submission").status_code == 400
    assert client.get("/v1/job/web/submission?version=x").status_code == 400
    assert client.get("/v1/job/nope/submission?version=0").status_code == 404


def test_a_pruned_version_takes_its_source_with_it(client: FlaskClient, pg: Conn) -> None:
    put(client, minimal_job(), {"Source": "v0", "Format": "hcl2"})
    put(client, minimal_job(Meta={"v": "1"}), {"Source": "v1", "Format": "hcl2"})
    pg.execute("DELETE FROM job_versions WHERE job_id = 'web' AND version = 0")
    pg.commit()
    assert pg.execute("SELECT version FROM job_submissions").fetchall() == [(1,)]


def test_the_cli_builds_the_submission_as_nomads_does(tmp_path: Path) -> None:
    job_file, var_file = tmp_path / "web.nomad.hcl", tmp_path / "prod.vars"
    job_file.write_text(HCL)
    var_file.write_text("count = 2\n")
    built = job_submission(
        str(job_file), {"count": "3"}, (str(var_file),), {"NOMAD_VAR_count": "9", "NOMAD_VAR_x": "y"}
    )
    assert built == {
        "Source": HCL,
        "Format": "hcl2",
        "VariableFlags": {"count": "3", "x": "y"},
        "Variables": "count = 2",
    }
    json_file = tmp_path / "web.json"
    json_file.write_text('{"Job": {"ID": "web"}}')
    assert job_submission(str(json_file), {}, (), {})["Format"] == "json"


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.usefixtures("sent")
def test_job_run_sends_the_source_and_inspect_hcl_prints_it(client: FlaskClient, tmp_path: Path) -> None:
    job_file = tmp_path / "web.nomad.hcl"
    job_file.write_text(HCL)
    ran = run("job", "run", "-detach", "-var", "count=2", str(job_file))
    assert ran.exit_code == 0, ran.output
    shown = run("job", "inspect", "-hcl", "web")
    assert shown.exit_code == 0, shown.output
    assert shown.output == HCL + "\n"
    hint = run("job", "inspect", "-hcl", "-with-vars", "web")
    assert "corral job run -namespace default -var count=2 web" in hint.output
    assert run("job", "inspect", "-hcl", "-version", "0", "web").output == HCL + "\n"
    missing = run("job", "inspect", "-hcl", "-version", "7", "web")
    assert missing.exit_code == 1 and "couldn't be found" in missing.output
    assert run("job", "inspect", "-hcl", "-json", "web").exit_code == 2
    assert run("job", "inspect", "-with-vars", "web").exit_code == 2
