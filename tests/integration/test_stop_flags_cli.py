"""`corral job stop -no-shutdown-delay -global` and `corral alloc stop -no-shutdown-delay`: the
flags reach the routes, which mark the allocations DesiredTransition.NoShutdownDelay."""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import json_body, minimal_job
from tests.support.rows import insert_allocation, insert_node

pytestmark = [pytest.mark.integration, pytest.mark.usefixtures("sent")]
Conn = psycopg.Connection[tuple[object, ...]]


def cli(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result


def running_alloc(client: FlaskClient, pg: Conn) -> str:
    resp = client.put("/v1/jobs", json={"Job": minimal_job("web")})
    assert resp.status_code == 200, resp.json
    return insert_allocation(pg, insert_node(pg), str(json_body(resp)["EvalID"]))


def transition(pg: Conn, alloc: str) -> object:
    row = pg.execute("SELECT desired_transition FROM allocations WHERE id = %s", (alloc,)).fetchone()
    assert row is not None
    return row[0]


def test_job_stop_no_shutdown_delay_marks_the_allocations(client: FlaskClient, pg: Conn) -> None:
    alloc = running_alloc(client, pg)
    result = cli("job", "stop", "-no-shutdown-delay", "-global", "-detach", "web")
    assert result.exit_code == 0, result.output
    assert result.output.startswith("Evaluation ID: ")
    assert transition(pg, alloc) == {"NoShutdownDelay": True}


def test_job_stop_without_the_flag_leaves_them(client: FlaskClient, pg: Conn) -> None:
    alloc = running_alloc(client, pg)
    assert cli("job", "stop", "-detach", "web").exit_code == 0
    assert transition(pg, alloc) == {}


def test_alloc_stop_no_shutdown_delay(client: FlaskClient, pg: Conn) -> None:
    alloc = running_alloc(client, pg)
    result = cli("alloc", "stop", "-no-shutdown-delay", "-detach", alloc[:8])
    assert result.exit_code == 0, result.output
    assert f"Allocation {alloc} stop requested" in result.output
    assert transition(pg, alloc) == {"Migrate": True, "NoShutdownDelay": True}
