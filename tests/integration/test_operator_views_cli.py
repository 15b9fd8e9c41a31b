"""Nomad's read commands against the API in-process (the CLI's requests served by the Flask test
client): `node status|eligibility`, `alloc status`, `eval list|status`, `job inspect|allocs|
deployments`, `status <prefix>`, `server members`, `agent-info`, `version`, with -json and -t
and ID prefixes (issue 19, item 1)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from app.cli.support.output import TemplateError, render_template
from tests.support.api import minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_node

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def cli(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result


def test_node_status_list_one_json_template_and_eligibility(pg: Conn) -> None:
    node = insert_node(pg, name="alpha")
    listed = cli("node", "status")
    assert listed.exit_code == 0, listed.output
    header, row = listed.output.splitlines()
    assert header.split() == ["ID", "Node", "Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"]
    assert row.split() == [node[:8], "default", "dc1", "alpha", "<none>", "false", "eligible", "ready"]

    one = cli("node", "status", node[:5])
    assert one.exit_code == 0, one.output
    assert f"ID          = {node}" in one.output and "Eligibility = eligible" in one.output
    assert "No allocations placed" in one.output
    assert json.loads(cli("node", "status", "-json", node[:5]).output)["ID"] == node
    assert cli("node", "status", "-t", "{{range .}}{{.Name}}/{{.Status}}\n{{end}}").output == "alpha/ready\n"

    off = cli("node", "eligibility", "-disable", node[:6])
    assert off.exit_code == 0, off.output
    assert off.output == f'Node "{node}" scheduling eligibility set: ineligible for scheduling\n'
    assert "ineligible" in cli("node", "status").output
    assert cli("node", "eligibility", node).exit_code == 2
    missing = cli("node", "status", "ffffffff")
    assert missing.exit_code == 1 and 'No node(s) with prefix or id "ffffffff" found' in missing.output


def test_alloc_eval_job_views_and_status_by_prefix(client: FlaskClient, pg: Conn) -> None:
    reg = register(client, minimal_job())
    node = insert_node(pg)
    alloc = insert_allocation(pg, node, reg["EvalID"])
    pg.execute("UPDATE evaluations SET status = 'complete'")

    shown = cli("alloc", "status", alloc[:8])
    assert shown.exit_code == 0, shown.output
    assert f"ID                  = {alloc}" in shown.output and "Client Status       = running" in shown.output
    assert cli("alloc", "status", "-t", "{{.JobID}} {{.TaskGroup}}", alloc[:8]).output == "web g"

    evals = cli("eval", "list")
    assert evals.exit_code == 0, evals.output
    assert evals.output.splitlines()[1].split() == [
        reg["EvalID"][:8], "50", "job-register", "web", "default", "<none>", "complete", "false",
    ]  # fmt: skip
    status = cli("eval", "status", reg["EvalID"][:8])
    assert status.exit_code == 0 and "TriggeredBy        = job-register" in status.output, status.output
    assert json.loads(cli("eval", "status", "-json", reg["EvalID"]).output)["ID"] == reg["EvalID"]

    inspected = json.loads(cli("job", "inspect", "web").output)
    assert inspected["Job"]["ID"] == "web"
    allocs = cli("job", "allocs", "web")
    assert allocs.output.splitlines()[1].split()[:6] == [alloc[:8], node[:8], "g", "0", "run", "running"]
    assert cli("job", "deployments", "web").output == "No deployments found\n"

    assert "Summary" in cli("status", "web").output
    assert f"ID                  = {alloc}" in cli("status", alloc[:8]).output
    assert "Eligibility" in cli("status", node[:8]).output
    nothing = cli("status", "zzzz")
    assert nothing.exit_code == 1 and "No matches found for prefix 'zzzz'" in nothing.output
    assert cli("status").output.splitlines()[1].split()[0] == "web"


def test_agent_views_and_version() -> None:
    members = cli("server", "members")
    assert members.exit_code == 0, members.output
    assert members.output.split()[:8] == [
        "Name",
        "Address",
        "Port",
        "Status",
        "Leader",
        "Build",
        "Datacenter",
        "Region",
    ]
    assert "alive" in members.output
    info = cli("agent-info")
    assert info.exit_code == 0 and "schema_revision" in info.output, info.output
    assert "\nnomad\n" in info.output and "state_index" in info.output and "\nruntime\n" in info.output
    assert cli("version").output.startswith("Corral v")
    both = cli("agent-info", "-json", "-t", "{{.}}")
    assert both.exit_code == 2 and "not both" in both.output


def test_template_subset() -> None:
    data = {"A": {"B": 1}, "L": [{"N": "x"}, {"N": "y"}], "F": False}
    assert render_template("{{ .A.B }}|{{range .L}}{{.N}},{{end}}|{{if .F}}t{{else}}f{{end}}", data) == "1|x,y,|f"
    assert render_template("{{- range .L -}} [{{.N}}] {{- end}}", data) == "[x][y]"
    assert render_template("{{.Missing}}", data) == "<no value>"
    with pytest.raises(TemplateError, match="unsupported action"):
        render_template("{{ printf .A }}", data)
    with pytest.raises(TemplateError, match="no"):
        render_template("{{range .L}}x", data)
