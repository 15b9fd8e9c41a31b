"""The evaluation monitor (issue 19, item 2) against the real API in-process: `corral job run`
follows its evaluation to the end, prints the allocations it placed or Nomad's placement failure
block, and exits 2 when placement failed; `job status` shows "Placement Failure". The scheduler
is played by the test: the monitor's sleep between polls finishes the evaluation in the database."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from app.cli import main
from app.cli.support import monitor
from tests.support.api import minimal_job
from tests.support.rows import Conn, deployed_alloc, group_state, insert_allocation, insert_deployment, insert_node

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]

FAILED = {
    "g": {
        "NodesEvaluated": 1,
        "NodesExhausted": 1,
        "DimensionExhausted": {"memory": 1},
        "ConstraintFiltered": {"${attr.kernel.name} = windows": 2},
        "CoalescedFailures": 1,
    }
}


def run_job(tmp_path: Path, *extra: str) -> Result:
    spec = tmp_path / "web.json"
    spec.write_text(json.dumps({"Job": minimal_job()}))
    return CliRunner().invoke(main, ["job", "run", *extra, str(spec)])


def scheduler_finishes(pg: Conn, monkeypatch: pytest.MonkeyPatch, *, place: bool) -> None:
    def finish(_seconds: float) -> None:
        (eval_id, job_id) = pg.execute("SELECT id, job_id FROM evaluations WHERE status = 'pending'").fetchone() or (
            None,
            None,
        )
        if eval_id is None:
            return
        if place:
            insert_allocation(pg, insert_node(pg), str(eval_id), job_id=str(job_id))
            pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (eval_id,))
        else:
            blocked = uuid.uuid4()
            pg.execute(
                "INSERT INTO evaluations (id, namespace, job_id, priority, type, triggered_by, job_modify_index, "
                "status, previous_eval, create_index, modify_index) SELECT %s, namespace, job_id, priority, type, "
                "'queued-allocs', job_modify_index, 'blocked', id, create_index + 1, modify_index + 1 "
                "FROM evaluations WHERE id = %s",
                (blocked, eval_id),
            )
            pg.execute(
                "UPDATE evaluations SET status = 'complete', failed_tg_allocs = %s, blocked_eval = %s WHERE id = %s",
                (json.dumps(FAILED), blocked, eval_id),
            )

    monkeypatch.setattr("app.cli.support.monitor.time.sleep", finish)


def test_run_monitors_the_evaluation_and_lists_the_allocation_it_placed(
    tmp_path: Path, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheduler_finishes(pg, monkeypatch, place=True)
    result = run_job(tmp_path)
    assert result.exit_code == 0, result.output
    lines = [line.split(": ", 1)[1] if ": " in line else line for line in result.output.splitlines()]
    (eval_id,) = pg.execute("SELECT id FROM evaluations").fetchone() or ()
    (alloc_id, node_id) = pg.execute("SELECT id, node_id FROM allocations").fetchone() or ()
    assert lines == [
        f'Monitoring evaluation "{str(eval_id)[:8]}"',
        'Evaluation triggered by job "web"',
        f'Allocation "{str(alloc_id)[:8]}" created: node "{str(node_id)[:8]}", group "g"',
        'Evaluation status changed: "pending" -> "complete"',
        f'Evaluation "{str(eval_id)[:8]}" finished with status "complete"',
    ]
    assert result.output.startswith("==> 20") and "\n    20" in result.output


def test_placement_failure_exits_2_and_job_status_shows_it(
    tmp_path: Path, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    scheduler_finishes(pg, monkeypatch, place=False)
    result = run_job(tmp_path, "-verbose")
    assert result.exit_code == 2, result.output
    text = result.output
    assert 'finished with status "complete" but failed to place all allocations:' in text
    assert 'Task Group "g" (failed to place 2 allocations):' in text
    assert '      * Constraint "${attr.kernel.name} = windows": 2 nodes excluded by filter' in text
    assert "      * Resources exhausted on 1 nodes" in text
    assert '      * Dimension "memory" exhausted on 1 nodes' in text
    (blocked,) = pg.execute("SELECT id FROM evaluations WHERE status = 'blocked'").fetchone() or ()
    assert f'Evaluation "{blocked}" waiting for additional capacity to place remainder' in text

    status = CliRunner().invoke(main, ["job", "status", "web"])
    assert status.exit_code == 0, status.output
    section = status.output[status.output.index("Placement Failure") :].splitlines()
    assert section[:5] == [
        "Placement Failure",
        'Task Group "g":',
        '  * Constraint "${attr.kernel.name} = windows": 2 nodes excluded by filter',
        "  * Resources exhausted on 1 nodes",
        '  * Dimension "memory" exhausted on 1 nodes',
    ]


def test_detach_prints_the_evaluation_and_returns(tmp_path: Path, pg: Conn) -> None:
    result = run_job(tmp_path, "-detach")
    assert result.exit_code == 0, result.output
    (eval_id,) = pg.execute("SELECT id FROM evaluations").fetchone() or ()
    assert result.output.splitlines() == ["Job registration successful", f"Evaluation ID: {eval_id}"]
    assert "Placement Failure" not in CliRunner().invoke(main, ["job", "status", "web"]).output


def scheduler_deploys(pg: Conn, monkeypatch: pytest.MonkeyPatch, outcome: str) -> None:
    """The first sleep places an allocation within a new deployment and completes the evaluation;
    the next ones (the deployment monitor's) end the deployment with `outcome`."""

    def step(_seconds: float) -> None:
        row = pg.execute("SELECT id, job_id FROM evaluations WHERE status = 'pending'").fetchone()
        if row is not None:
            deployment = insert_deployment(pg, groups={"g": group_state(DesiredTotal=1)})
            deployed_alloc(pg, insert_node(pg), str(row[0]), deployment, healthy=True)
            pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (row[0],))
            return
        described = {"successful": "Deployment completed successfully", "failed": "Failed due to unhealthy allocations"}
        pg.execute(
            "UPDATE deployments SET status = %s, status_description = %s, modify_index = modify_index + 1",
            (outcome, described[outcome]),
        )

    monkeypatch.setattr("app.cli.support.monitor.time.sleep", step)


@pytest.mark.parametrize(("outcome", "code"), [("successful", 0), ("failed", 1)])
def test_run_follows_the_deployment_its_allocations_belong_to(
    tmp_path: Path, pg: Conn, monkeypatch: pytest.MonkeyPatch, outcome: str, code: int
) -> None:
    scheduler_deploys(pg, monkeypatch, outcome)
    result = run_job(tmp_path)
    assert result.exit_code == code, result.output
    (deployment,) = pg.execute("SELECT id FROM deployments").fetchone() or ()
    text = result.output
    assert f'Monitoring deployment "{str(deployment)[:8]}"' in text
    # Each change of the deployment is printed once, as Nomad's monitor does off a terminal.
    assert text.count("Status      = running") == 1 and text.count(f"Status      = {outcome}") == 1
    assert text.index('finished with status "complete"') < text.index("Monitoring deployment")


def test_run_returns_when_the_deployment_waits_for_promotion(
    tmp_path: Path, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A canary placed and healthy, promotion manual: the deployment will not move until an
    operator acts, so the monitor ends (exit 0) and says what to run."""
    steps: list[str] = []

    def step(_seconds: float) -> None:
        row = pg.execute("SELECT id FROM evaluations WHERE status = 'pending'").fetchone()
        if row is not None:
            groups = {"g": group_state(DesiredTotal=2, DesiredCanaries=1)}
            needs = monitor.NEEDS_PROMOTION
            deployment = insert_deployment(pg, groups=groups, description=needs)
            steps.append(deployed_alloc(pg, insert_node(pg), str(row[0]), deployment, healthy=None, canary=True))
            pg.execute("UPDATE evaluations SET status = 'complete' WHERE id = %s", (row[0],))
            return
        # The canary becomes healthy; any later sleep would be a monitor that did not return.
        assert len(steps) == 1, "the monitor kept waiting on a deployment that needs promotion"
        steps.append("healthy")
        status = '{"Healthy": true, "Canary": true, "Timestamp": null, "ModifyIndex": 1}'
        pg.execute("UPDATE allocations SET deployment_status = %s", (status,))

    monkeypatch.setattr("app.cli.support.monitor.time.sleep", step)
    result = run_job(tmp_path)
    assert result.exit_code == 0, result.output
    (deployment,) = pg.execute("SELECT id FROM deployments").fetchone() or ()
    short = str(deployment)[:8]
    assert result.output.rstrip().endswith(
        f'Deployment "{short}" waits for promotion: corral deployment promote {short}'
    )
    assert steps[-1] == "healthy"
