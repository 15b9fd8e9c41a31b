"""`corral job restart`'s batches (-batch-size as a number or a percentage), -on-error fail and
ask, -yes, -batch-wait, the active-deployment guard and -reschedule (stop, then follow the
replacement until it runs), against the API in-process. No node agent answers, so in-place
restarts fail: that is what exercises the error handling."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from app.cli.jobs import job_restart
from tests.support.api import minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_deployment, insert_node

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]


def run(*args: str, input: str | None = None) -> Result:
    result = CliRunner().invoke(main, ["job", "restart", *args], input=input)
    assert "Traceback" not in result.output
    return result


def restarts(sent: list[Any]) -> list[str]:
    return [path for method, path, _ in sent if method == "PUT" and path.endswith("/restart")]


@pytest.fixture
def three(client: FlaskClient, pg: Conn) -> list[str]:
    eval_id = register(client, minimal_job())["EvalID"]
    node = insert_node(pg)
    return [insert_allocation(pg, node, eval_id) for _ in range(3)]


def test_batches_and_on_error_fail(three: list[str], sent: list[Any]) -> None:
    result = run("-batch-size", "2", "-on-error", "fail", "web")
    assert result.exit_code == 1
    assert "Restarting 1st batch of 2 allocations" in result.output
    assert "Stopping job restart due to error" in result.output and "2nd batch" not in result.output
    assert len(restarts(sent)) == 2
    assert "2 errors occurred while restarting job" in result.output


def test_yes_goes_on_after_errors_and_a_percentage_rounds_up(three: list[str], sent: list[Any]) -> None:
    result = run("-yes", "-batch-size", "50%", "web")
    assert result.exit_code == 1
    assert "Restarting 1st batch of 2 allocations" in result.output
    assert "Restarting 2nd batch of 1 allocations" in result.output
    assert sorted(restarts(sent)) == sorted(f"/v1/client/allocation/{a}/restart" for a in three)
    assert "Job restart finished with errors" in result.output


def test_ask_on_error_stops_when_told_no(three: list[str], sent: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job_restart, "_interactive", lambda: True)
    result = run("web", input="n\n")
    assert "Ignore the errors above and proceed with the next batch? [y/N]" in result.output
    assert "Job restart canceled" in result.output and len(restarts(sent)) == 1
    assert result.exit_code == 1


def test_batch_wait_sleeps_between_batches(three: list[str], sent: list[Any], monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(job_restart, "pause", slept.append)
    result = run("-yes", "-batch-wait", "1m30s", "web")
    assert slept == [90.0, 90.0] and "Waiting 90s before restarting the next batch" in result.output


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["-batch-size", "0"], "number value must be greater than zero"),
        (["-batch-size", "5%%"], "batch size must be an integer or a percentage"),
        (["-batch-wait", "soon"], 'Invalid -batch-wait value "soon"'),
        (["-batch-wait", "ask"], '"ask" cannot be used when terminal is not interactive'),
        (["-on-error", "retry"], "'retry' is not one of 'ask', 'fail'"),
        (["-reschedule", "-task", "t"], "The -reschedule option cannot be used with -task"),
        (["-all-tasks", "-task", "t"], "The -all-tasks option cannot be used with -task"),
    ],
)
def test_bad_flags_are_usage_errors(flags: list[str], message: str) -> None:
    result = run("-on-error", "fail", *flags, "web") if "-on-error" not in flags else run(*flags, "web")
    assert result.exit_code == 2 and message in result.output, result.output


def test_an_active_deployment_stops_the_restart(
    client: FlaskClient, pg: Conn, three: list[str], sent: list[Any]
) -> None:
    deployment = insert_deployment(pg)
    result = run("-yes", "web")
    assert result.exit_code == 1 and f'Deployment "{deployment[:8]}" is "running"' in result.output
    assert restarts(sent) == []


def test_reschedule_stops_and_follows_the_replacement(
    client: FlaskClient, pg: Conn, sent: list[Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_id = register(client, minimal_job())["EvalID"]
    node = insert_node(pg)
    old = insert_allocation(pg, node, eval_id)

    def replace(_: float) -> None:
        """The scheduler's part, done by hand while the command waits: a running replacement."""
        new = insert_allocation(pg, node, eval_id)
        pg.execute("UPDATE allocations SET previous_allocation = %s WHERE id = %s", (old, new))
        pg.execute("UPDATE allocations SET next_allocation = %s WHERE id = %s", (new, old))

    monkeypatch.setattr(job_restart, "pause", replace)
    result = run("-reschedule", "-no-shutdown-delay", "-on-error", "fail", "web")
    assert result.exit_code == 0, result.output
    assert ("PUT", f"/v1/allocation/{old}/stop", None) in sent
    assert f'Rescheduling allocation "{old[:8]}" for group "g"' in result.output
    assert "replaced by" in result.output and 'is "running"' in result.output
    assert "Job restarted successfully!" in result.output
