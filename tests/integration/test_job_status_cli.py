"""`corral job status` and `corral job stop` against the API in-process (the CLI's HTTP calls
served by the Flask test client)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register
from tests.support.rows import Conn, deployed_alloc, insert_deployment, insert_node

# `sent` routes the CLI's requests to the Flask test client.
pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["job", *args])


def test_status_lists_jobs_then_shows_one_with_its_deployment_and_allocations(client: FlaskClient, pg: Conn) -> None:
    assert run("status").output == "No running jobs\n"
    reg = register(client, minimal_job())
    listed = run("status")
    assert listed.exit_code == 0, listed.output
    assert listed.output.splitlines()[0].split() == ["ID", "Type", "Priority", "Status", "Submit", "Date"]
    assert listed.output.splitlines()[1].split()[:4] == ["web", "service", "50", "pending"]

    dep = insert_deployment(pg)
    alloc = deployed_alloc(pg, insert_node(pg), reg["EvalID"], dep, healthy=True)
    pg.execute("UPDATE evaluations SET status = 'complete'")
    shown = run("status", "web")
    assert shown.exit_code == 0, shown.output
    text = shown.output
    assert "Status        = running" in text
    assert "Latest Deployment" in text and f"ID          = {dep[:8]}" in text
    assert f"{alloc[:8]}" in text and "Allocations" in text
    summary = text[text.index("Summary") :].splitlines()
    assert summary[1].split() == [
        "Task",
        "Group",
        "Queued",
        "Starting",
        "Running",
        "Failed",
        "Complete",
        "Lost",
        "Unknown",
    ]
    assert summary[2].split()[:4] == ["g", "0", "0", "1"]


def test_stop_prints_the_evaluation_and_status_says_stopped(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    stopped = run("stop", "-detach", "web")
    assert stopped.exit_code == 0, stopped.output
    assert stopped.output.startswith("Evaluation ID: ")
    pg.execute("UPDATE evaluations SET status = 'complete'")
    assert "Status        = dead (stopped)" in run("status", "web").output
    missing = run("stop", "-detach", "nope")
    assert missing.exit_code != 0 and "404" in missing.output
    purged = run("stop", "-purge", "-detach", "web")
    assert purged.exit_code == 0 and client.get("/v1/job/web").status_code == 404
