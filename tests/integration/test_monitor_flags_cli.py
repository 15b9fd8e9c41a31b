"""`eval list` newest first, `eval status -monitor` and `deployment status -monitor|-json`,
against the API in-process (the database plays the scheduler between polls)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_deployment, insert_node

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def test_eval_list_prints_the_newest_first(client: FlaskClient) -> None:
    first = register(client, minimal_job("a"))["EvalID"]
    second = register(client, minimal_job("b"))["EvalID"]
    listed = run("eval", "list")
    assert listed.exit_code == 0, listed.output
    assert [line.split()[0] for line in listed.output.splitlines()[1:]] == [second[:8], first[:8]]
    newest = run("eval", "list", "-per-page", "1", "-json")
    assert [e["ID"] for e in json.loads(newest.output)] == [second]


def test_eval_status_monitor_follows_the_evaluation(
    client: FlaskClient, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_id = register(client, minimal_job())["EvalID"]

    def scheduled(_seconds: float) -> None:
        insert_allocation(pg, insert_node(pg), eval_id)
        pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (eval_id,))

    monkeypatch.setattr("app.cli.support.monitor.time.sleep", scheduled)
    followed = run("eval", "status", "-monitor", eval_id[:8])
    assert followed.exit_code == 0, followed.output
    assert f'Monitoring evaluation "{eval_id[:8]}"' in followed.output
    assert f'Evaluation "{eval_id[:8]}" finished with status "complete"' in followed.output
    both = run("eval", "status", "-monitor", "-json", eval_id)
    assert both.exit_code == 2 and "cannot be used with" in both.output


@pytest.mark.parametrize(("outcome", "code"), [("successful", 0), ("failed", 1)])
def test_deployment_status_monitor_prints_each_change_until_the_end(
    client: FlaskClient, pg: Conn, monkeypatch: pytest.MonkeyPatch, outcome: str, code: int
) -> None:
    register(client, minimal_job())
    deployment = insert_deployment(pg)

    def ends(_seconds: float) -> None:
        pg.execute("UPDATE deployments SET status = %s, modify_index = modify_index + 1", (outcome,))

    monkeypatch.setattr("app.cli.support.monitor.time.sleep", ends)
    followed = run("deployment", "status", "-monitor", deployment[:8])
    assert followed.exit_code == code, followed.output
    assert f'Monitoring deployment "{deployment[:8]}"' in followed.output
    assert followed.output.count("Status      = running") == 1
    assert followed.output.count(f"Status      = {outcome}") == 1
    shown = run("deployment", "status", "-json", deployment[:8])
    assert shown.exit_code == 0 and json.loads(shown.output)["Status"] == outcome
