"""`corral deployment ...` against the API in-process: the CLI's HTTP calls are served by the
Flask test client, so prefix resolution, the requests sent and the printed text are all real."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register
from tests.support.rows import Conn, deployed_alloc, group_state, insert_deployment, insert_node

pytestmark = pytest.mark.integration


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["deployment", *args])


def with_prefix(pg: Conn, prefix: str, **fields: Any) -> str:
    """A deployment whose ID starts with `prefix` (the helper's random ID is replaced)."""
    dep = insert_deployment(pg, **fields)
    wanted = prefix + dep[len(prefix) :]
    pg.execute("UPDATE deployments SET id = %s WHERE id = %s", (wanted, dep))
    return wanted


def test_list_prints_a_table_newest_first(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    empty = run("list")
    assert empty.exit_code == 0, empty.output
    assert empty.output == "No deployments found\n"
    register(client, minimal_job())
    old = insert_deployment(pg, create_index=100, status="successful", description="Deployment completed successfully")
    new = insert_deployment(pg, create_index=200)
    result = run("list")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].split() == ["ID", "Job", "ID", "Job", "Version", "Status", "Description"]
    assert lines[1].split() == [new[:8], "web", "0", "running", "Deployment", "is", "running"]
    assert lines[2].split()[:4] == [old[:8], "web", "0", "successful"]
    assert lines[0].index("Job ID") == lines[1].index("web")
    verbose = run("list", "-verbose", "-namespace", "*")
    assert verbose.output.splitlines()[1].startswith(new + "  ")
    assert sent[-1] == ("GET", "/v1/deployments", None)


def test_status_resolves_a_prefix_and_prints_groups(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    reg = register(client, minimal_job())
    groups = {
        "g": group_state(
            DesiredCanaries=1,
            DesiredTotal=3,
            AutoRevert=True,
            ProgressDeadline=600_000_000_000,
            RequireProgressBy=1_700_000_000_000_000_000,
        ),
        "a": group_state(DesiredTotal=1, ProgressDeadline=600_000_000_000),
    }
    dep = with_prefix(pg, "abcdef12", groups=groups)
    node = insert_node(pg)
    deployed_alloc(pg, node, reg["EvalID"], dep, healthy=True, canary=True)
    deployed_alloc(pg, node, reg["EvalID"], dep, healthy=False)

    result = run("status", "abcdef")
    assert result.exit_code == 0, result.output
    assert result.output == (
        "ID          = abcdef12\n"
        "Job ID      = web\n"
        "Job Version = 0\n"
        "Status      = running\n"
        "Description = Deployment is running\n"
        "\n"
        "Deployed\n"
        "Task Group  Auto Revert  Promoted  Desired  Canaries  Placed  Healthy  Unhealthy  Progress Deadline\n"
        "a           false        N/A       1        0         0       0        0          TBD\n"
        "g           true         false     3        1         2       1        1          2023-11-14T22:13:20Z\n"
    )
    assert ("GET", f"/v1/deployment/{dep}", None) in sent
    full = run("status", "-verbose", dep)
    assert full.exit_code == 0 and f"ID          = {dep}\n" in full.output


def test_status_of_a_finished_deployment_shows_no_deadline(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    register(client, minimal_job())
    dep = insert_deployment(
        pg,
        status="failed",
        description="Failed due to progress deadline",
        groups={"g": group_state(ProgressDeadline=1)},
    )
    result = run("status", dep)
    assert result.exit_code == 0, result.output
    assert "Status      = failed\nDescription = Failed due to progress deadline\n" in result.output
    assert result.output.splitlines()[-1].split()[-1] == "N/A"


def test_ambiguous_or_unknown_prefixes_are_errors(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    register(client, minimal_job())
    first = with_prefix(pg, "aaaa1111")
    second = with_prefix(pg, "aaaa2222")
    ambiguous = run("status", "aaaa")
    assert ambiguous.exit_code == 1
    assert "Prefix matched multiple deployments\n\nID        Job ID" in ambiguous.output
    assert first[:8] in ambiguous.output and second[:8] in ambiguous.output
    unknown = run("fail", "bbbb")
    assert unknown.exit_code == 1 and 'No deployment(s) with prefix or id "bbbb" found' in unknown.output
    bad = run("status", "xyz")
    assert bad.exit_code == 1 and 'No deployment(s) with prefix or id "xyz" found' in bad.output
    missing = run("status", str(uuid.uuid4()))
    assert missing.exit_code == 1 and "404" in missing.output and "DeploymentID" in missing.output


def test_promote_sends_all_or_the_named_groups(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    reg = register(client, minimal_job())
    groups = {"g": group_state(DesiredCanaries=1)}
    dep = insert_deployment(pg, groups=groups)
    node = insert_node(pg)
    deployed_alloc(pg, node, reg["EvalID"], dep, healthy=True, canary=True)

    refused = run("promote", dep, "-group", "nope")
    assert refused.exit_code == 1 and "400" in refused.output and "Groups" in refused.output
    assert sent[-1] == (
        "POST",
        f"/v1/deployment/promote/{dep}",
        {"DeploymentID": dep, "All": False, "Groups": ["nope"]},
    )

    result = run("promote", dep[:8])
    assert result.exit_code == 0, result.output
    assert sent[-1] == ("POST", f"/v1/deployment/promote/{dep}", {"DeploymentID": dep, "All": True})
    lines = result.output.splitlines()
    assert lines[0] == f"Deployment {dep} promoted"
    assert lines[1].startswith("Evaluation ID: ") and len(lines[1].split()[-1]) == 36


def test_promote_with_unhealthy_canaries_reports_the_409(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    reg = register(client, minimal_job())
    dep = insert_deployment(pg, groups={"g": group_state(DesiredCanaries=1)})
    deployed_alloc(pg, insert_node(pg), reg["EvalID"], dep, healthy=False, canary=True)
    result = run("promote", dep, "-group", "g")
    assert result.exit_code == 1
    assert "409" in result.output and "Groups" in result.output and "0/1 healthy" in result.output


def test_pause_resume_and_fail(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    register(client, minimal_job())
    dep = insert_deployment(pg)
    paused = run("pause", dep)
    assert paused.exit_code == 0, paused.output
    assert paused.output == f"Deployment {dep} paused\n"
    assert sent[-1][2] == {"DeploymentID": dep, "Pause": True}
    resumed = run("resume", dep)
    assert resumed.exit_code == 0, resumed.output
    assert resumed.output.startswith(f"Deployment {dep} resumed\nEvaluation ID: ")
    assert sent[-1][2] == {"DeploymentID": dep, "Pause": False}
    failed = run("fail", dep)
    assert failed.exit_code == 0, failed.output
    assert failed.output.startswith(f"Deployment {dep} failed\nEvaluation ID: ")
    again = run("fail", dep)
    assert again.exit_code == 1 and "409" in again.output


def test_fail_reports_the_reverted_version(client: FlaskClient, pg: Conn, sent: list[Any]) -> None:
    register(client, minimal_job())
    client.post("/v1/job/web/stable", json={"JobVersion": 0, "Stable": True})
    changed = minimal_job()
    changed["TaskGroups"][0]["Count"] = 4
    register(client, changed)
    dep = insert_deployment(pg, groups={"g": group_state(AutoRevert=True)})
    result = run("fail", dep)
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[1] == "Job reverted to version 0 (the latest stable version)"


def test_help_texts_name_every_command() -> None:
    result = CliRunner().invoke(main, ["deployment", "--help"])
    assert result.exit_code == 0
    for command in ("list", "status", "promote", "fail", "pause", "resume"):
        assert f"  {command} " in result.output
    promote = CliRunner().invoke(main, ["deployment", "promote", "-h"])
    assert "-group, --group GROUP" in promote.output
