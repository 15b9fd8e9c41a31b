"""`corral node pool list | info | apply | delete | nodes | jobs` against the API in-process (the
CLI's requests served by the Flask test client), in Nomad's layouts and messages."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, node_body, register

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]
SPEC = """
node_pool "gpu" {
  description = "GPU nodes"
  meta {
    team = "ml"
  }
}
"""


def cli(*args: str, stdin: str | None = None) -> Result:
    result = CliRunner().invoke(main, list(args), input=stdin)
    assert "Traceback" not in result.output
    return result


def test_apply_list_info_delete(tmp_path: Path) -> None:
    spec = tmp_path / "gpu.hcl"
    spec.write_text(SPEC)
    applied = cli("node", "pool", "apply", str(spec))
    assert applied.exit_code == 0 and applied.output == 'Successfully applied node pool "gpu"!\n', applied.output
    listed = cli("node", "pool", "list")
    assert listed.exit_code == 0
    assert [line.split()[0] for line in listed.output.splitlines()] == ["Name", "all", "default", "gpu"]
    assert "GPU nodes" in listed.output
    info = cli("node", "pool", "info", "gp")  # a unique prefix
    assert info.exit_code == 0, info.output
    assert "Name        = gpu" in info.output and "Description = GPU nodes" in info.output
    assert "Metadata\nteam = ml" in info.output and "No scheduler configuration" in info.output
    assert json.loads(cli("node", "pool", "info", "-json", "gpu").output)["Meta"] == {"team": "ml"}
    assert cli("node", "pool", "list", "-t", "{{range .}}{{.Name}},{{end}}").output == "all,default,gpu,"
    # -json and standard input: the API's object, as `node pool info -json` prints it.
    again = cli("node", "pool", "apply", "-json", "-", stdin=json.dumps({"Name": "gpu", "Description": "new"}))
    assert again.exit_code == 0, again.output
    assert "Description = new" in cli("node", "pool", "info", "gpu").output
    deleted = cli("node", "pool", "delete", "gpu")
    assert deleted.exit_code == 0 and deleted.output == 'Successfully deleted node pool "gpu"!\n'
    gone = cli("node", "pool", "info", "gpu")
    assert gone.exit_code == 1 and 'No node pool with prefix "gpu" found' in gone.output


def test_bad_input_is_an_error_naming_the_problem(tmp_path: Path) -> None:
    bad = tmp_path / "bad.hcl"
    bad.write_text('node_pool "x" { colour = "blue" }')
    refused = cli("node", "pool", "apply", str(bad))
    assert refused.exit_code == 1 and "unknown setting colour" in refused.output
    missing = cli("node", "pool", "apply", str(tmp_path / "nope.hcl"))
    assert missing.exit_code == 1 and "Failed to read file" in missing.output
    bad.write_text('node_pool "x" { scheduler_config { scheduler_algorithm = "spread" } }')
    enterprise = cli("node", "pool", "apply", str(bad))
    assert enterprise.exit_code == 1 and "SchedulerConfiguration" in enterprise.output
    builtin = cli("node", "pool", "delete", "default")
    assert builtin.exit_code == 1 and "built-in" in builtin.output
    assert cli("node", "pool", "info", "default").exit_code == 0  # an exact name among several matches


def test_nodes_and_jobs_of_a_pool(client: FlaskClient) -> None:
    node_id = str(uuid.uuid4())
    reply = client.put("/v1/node/register", json={"Node": node_body(node_id, Name="gpu-1", NodePool="gpu")})
    assert reply.status_code == 200
    register(client, minimal_job("trainer", NodePool="gpu"))
    nodes = cli("node", "pool", "nodes", "gpu")
    assert nodes.exit_code == 0, nodes.output
    header, row = nodes.output.splitlines()
    assert header.split()[:3] == ["ID", "Node", "Pool"] and row.split()[:2] == [node_id[:8], "gpu"]
    assert "gpu-1" in row
    jobs = cli("node", "pool", "jobs", "gpu")
    assert jobs.exit_code == 0 and jobs.output.splitlines()[1].split()[0] == "trainer", jobs.output
    assert cli("node", "pool", "jobs", "default").output == "No jobs\n"
    assert json.loads(cli("node", "pool", "nodes", "-json", "all").output)[0]["ID"] == node_id


@pytest.mark.parametrize(
    ("out", "name", "apply_flags"), [("hcl", "pool.nomad.hcl", []), ("json", "pool.nomad.json", ["-json"])]
)
def test_init_writes_an_example_that_applies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, out: str, name: str, apply_flags: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    written = cli("node", "pool", "init", "-out", out)
    assert written.exit_code == 0 and written.output == f"Example node pool specification written to {name}\n"
    again = cli("node", "pool", "init", "-out", out, "-quiet")
    assert again.exit_code == 1 and f'File "{name}" already exists' in again.output
    applied = cli("node", "pool", "apply", *apply_flags, name)
    assert applied.exit_code == 0, applied.output
    info = json.loads(cli("node", "pool", "info", "-json", "example").output)
    assert info["Description"] == "An example node pool" and info["Meta"] == {
        "environment": "production",
        "owner": "sre",
    }


def test_init_quiet_to_a_named_file(tmp_path: Path) -> None:
    target = tmp_path / "mine.hcl"
    written = cli("node", "pool", "init", "-quiet", str(target))
    assert written.exit_code == 0 and written.output == ""
    assert target.read_text().startswith("# An example node pool")
