"""DELETE /v1/evaluations (Nomad's Eval.Delete) and `corral eval delete`: only while the eval
broker is paused, only evaluations that are safe to delete."""

from __future__ import annotations

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_node

pytestmark = pytest.mark.integration


def pause(client: FlaskClient, paused: bool = True) -> None:
    resp = client.put("/v1/operator/scheduler/configuration", json={"PauseEvalBroker": paused})
    assert resp.status_code == 200, resp.get_data(as_text=True)


def eval_ids(pg: Conn) -> list[str]:
    return [str(r[0]) for r in pg.execute("SELECT id FROM evaluations ORDER BY create_index").fetchall()]


def test_refused_while_the_broker_runs(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    resp = client.delete("/v1/evaluations", json={"EvalIDs": eval_ids(pg)})
    assert resp.status_code == 409 and "eval broker must be paused" in resp.get_data(as_text=True)
    assert len(eval_ids(pg)) == 1


def test_delete_by_id_and_by_filter(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job("web"))
    register(client, minimal_job("api"))
    register(client, minimal_job("db"))
    pause(client)
    web, api, db = eval_ids(pg)
    resp = client.delete("/v1/evaluations", json={"EvalIDs": [web]})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    assert resp.json is not None and resp.json["Count"] == 1 and resp.json["Index"] > 0
    assert eval_ids(pg) == [api, db]
    by_filter = client.delete("/v1/evaluations", json={"Filter": 'JobID == "api"'})
    assert by_filter.json is not None and by_filter.json["Count"] == 1
    assert eval_ids(pg) == [db]
    none = client.delete("/v1/evaluations", json={"Filter": 'JobID == "nope"'})
    assert none.json is not None and none.json["Count"] == 0


def test_an_evaluation_that_placed_allocations_is_not_deleted(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    pause(client)
    (eval_id,) = eval_ids(pg)
    insert_allocation(pg, insert_node(pg), eval_id)
    pg.commit()
    resp = client.delete("/v1/evaluations", json={"EvalIDs": [eval_id]})
    assert resp.status_code == 400 and "not safe to delete" in resp.get_data(as_text=True)
    skipped = client.delete("/v1/evaluations", json={"Filter": 'JobID == "web"'})
    assert skipped.json is not None and skipped.json["Count"] == 0
    assert eval_ids(pg) == [eval_id]


def test_bad_requests_name_the_field(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job())
    pause(client)
    for body, status, field in (
        ({}, 400, "EvalIDs"),
        ({"EvalIDs": eval_ids(pg), "Filter": "JobID == x"}, 400, "EvalIDs"),
        ({"EvalIDs": ["nope"]}, 400, "EvalIDs"),
        ({"EvalIDs": ["6f1c3a52-8d0e-4d59-9a57-0c2b1c3e7a10"]}, 404, "EvalIDs"),
        ({"Filter": "JobID ==="}, 400, "Filter"),
        ({"Filter": 7}, 400, "Filter"),
    ):
        resp = client.delete("/v1/evaluations", json=body)
        assert resp.status_code == status and field in resp.get_data(as_text=True), body


def run(*args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(main, list(args), input=input)


@pytest.mark.usefixtures("sent")
def test_eval_delete_as_nomad(client: FlaskClient, pg: Conn) -> None:
    register(client, minimal_job("web"))
    register(client, minimal_job("api"))
    web, api = eval_ids(pg)
    unpaused = run("eval", "delete", web[:8])
    assert unpaused.exit_code == 1 and "Eval broker is not paused" in unpaused.output
    assert "-pause-eval-broker=true" in unpaused.output
    pause(client)
    one = run("eval", "delete", web[:8])
    assert one.exit_code == 0, one.output
    assert one.output == "Successfully deleted 1 evaluation\n"
    cancelled = run("eval", "delete", "-filter", 'JobID == "api"', input="n\n")
    assert "Are you sure you want to delete 1 evals? [y/N]" in cancelled.output
    assert "Cancelling eval deletion" in cancelled.output and eval_ids(pg) == [api]
    confirmed = run("eval", "delete", "-filter", 'JobID == "api"', input="y\n")
    assert confirmed.exit_code == 0 and "Successfully deleted 1 evaluation" in confirmed.output
    assert eval_ids(pg) == []
    assert run("eval", "delete", "-yes", "-filter", "JobID == x").output == "No evaluations were deleted\n"
    assert run("eval", "delete").exit_code == 1
