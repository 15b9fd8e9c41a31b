"""The worker's side of plans (app/pipeline/plans.py): one fenced, idempotent submit statement
that wakes the applier, and one verdict statement."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.engines import libpq_url
from app.db.leadership import Leadership
from app.pipeline import plans
from app.pipeline.broker import Claim, LeaseLost
from app.pipeline.plans import AppliedPlan
from app.structs import AllocationStop, Plan
from app.wire.plan import CompletionJson
from tests.support.pipeline import alloc, apply, claim, register, submit
from tests.support.rows import insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
COMPLETION: CompletionJson = {
    "SnapshotIndex": 0,
    "QueuedAllocations": {},
    "ClassEligibility": {},
    "EscapedComputedClass": False,
    "ScheduledAt": "2026-11-27T00:00:00+00:00",
    "Description": "",
}


def test_a_retried_submit_returns_the_same_plan(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg, cpu=2000)
    plan = Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, 0),)})
    first = submit(engine, held, plan)
    assert submit(engine, held, plan) == first
    assert submit(engine, held, plan, attempt=2) != first
    assert pg.execute("SELECT count(*) FROM plans").fetchone() == (2,)


def test_the_stored_plan_decodes_as_submitted(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    node = insert_node(pg, cpu=2000)
    plan = Plan(held.evaluation.id, 50, 7, node_allocation={uuid.UUID(node): (alloc(held, node, 0),)})
    plan_id = submit(engine, held, plan)
    row = pg.execute(
        "SELECT eval_token, attempt, snapshot_index, deployment IS NULL, completion IS NULL, "
        "jsonb_typeof(node_allocation) FROM plans WHERE id = %s",
        (plan_id,),
    ).fetchone()
    # No deployment and no completion are SQL NULLs, not JSON nulls.
    assert row == (held.token, 1, 7, True, True, "object")


def test_a_submit_without_the_lease_writes_nothing(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    pg.execute("UPDATE evaluations SET lease_token = gen_random_uuid()")
    with pytest.raises(LeaseLost):
        submit(engine, held, Plan(held.evaluation.id, 50, 0))
    assert pg.execute("SELECT count(*) FROM plans").fetchone() == (0,)


def test_a_submit_wakes_the_applier_and_its_verdict_the_workers(
    engine: Engine, database_url: str, term: tuple[Leadership, int]
) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    with psycopg.connect(libpq_url(database_url), autocommit=True) as listener:
        listener.execute("LISTEN corral_plans")
        listener.execute("LISTEN corral_verdicts")
        plan_id = submit(engine, held, Plan(held.evaluation.id, 50, 0))
        assert [n.channel for n in listener.notifies(timeout=5, stop_after=1)] == ["corral_plans"]
        assert apply(*term) == plan_id
        verdicts = [(n.channel, n.payload) for n in listener.notifies(timeout=5, stop_after=1)]
        # The batch's verdicts: id:placed:stopped:rejected_nodes:refresh_index:flags.
        assert verdicts == [("corral_verdicts", f"{plan_id}:0:0:0:0:")]


def replacing(held: Claim, first: Plan, roomy: str, full: str) -> Plan:
    """A plan that stops `first`'s placement on `roomy` and places two more there and two on
    `full` (600 MHz: one of 500 fits, so the node is rejected)."""
    kept = first.node_allocation[uuid.UUID(roomy)][0]
    return Plan(
        held.evaluation.id,
        50,
        0,
        node_update={uuid.UUID(roomy): (AllocationStop(kept.id, "stop", "replaced"),)},
        node_allocation={
            uuid.UUID(roomy): (alloc(held, roomy, 1), alloc(held, roomy, 2)),
            uuid.UUID(full): (alloc(held, full, 3), alloc(held, full, 4)),
        },
    )


def told_and_read(listener: Conn, engine: Engine, term: tuple[Leadership, int], plan_id: int) -> list[AppliedPlan]:
    """Apply the next plan: its verdict as the notification told it, and as the database reads."""
    assert apply(*term) == plan_id
    payloads = [n.payload for n in listener.notifies(timeout=5, stop_after=1)]
    told = plans.told_verdicts(payloads)
    assert list(told) == [plan_id]
    read = plans.result(engine, plan_id)
    assert read is not None
    return [told[plan_id], read]


def test_the_notification_tells_each_verdict_as_the_database_reads_it(
    engine: Engine, pg: Conn, database_url: str, term: tuple[Leadership, int]
) -> None:
    """Placements, stops, rejected nodes and the refresh index; the evaluation completed with
    its plan; a plan fenced because its lease moved on. The worker trusts the notification and
    reads nothing, so each must say what plan_verdict says."""
    register(engine, "web")
    register(engine, "api")
    held = claim(engine)
    assert held is not None
    roomy, full = insert_node(pg, cpu=2000, name="roomy"), insert_node(pg, cpu=600, name="full")
    with psycopg.connect(libpq_url(database_url), autocommit=True) as listener:
        listener.execute("LISTEN corral_verdicts")
        first = Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(roomy): (alloc(held, roomy, 0),)})
        told, read = told_and_read(listener, engine, term, submit(engine, held, first))
        assert told == read and (told.placed, told.partial, told.completed_eval) == (1, False, False)

        mixed = replacing(held, first, roomy, full)
        told, read = told_and_read(listener, engine, term, submit(engine, held, mixed, attempt=2))
        assert told == read
        assert (told.placed, told.stopped, told.rejected_nodes, told.partial) == (2, 1, 1, True)

        completing = Plan(held.evaluation.id, 50, 0)
        plan_id = plans.submit(engine, held, 3, completing, held.evaluation.job_id, "default", COMPLETION)
        told, read = told_and_read(listener, engine, term, plan_id)
        assert told == read and told.completed_eval and not told.fenced
        status = pg.execute("SELECT status FROM evaluations WHERE id = %s", (held.evaluation.id,)).fetchone()
        assert status == ("complete",)

        other = claim(engine)
        assert other is not None
        plan_id = plans.submit(engine, other, 1, Plan(other.evaluation.id, 50, 0), other.evaluation.job_id, "default")
        pg.execute("UPDATE evaluations SET lease_token = gen_random_uuid() WHERE id = %s", (other.evaluation.id,))
        told, read = told_and_read(listener, engine, term, plan_id)
        assert told == read and told.fenced and not told.completed_eval


@pytest.mark.parametrize(
    ("payload", "told"),
    [
        ("", {}),
        ("12", {}),  # an earlier applier's bare IDs: read the database
        ("12:3:0:0:0:c,13:0:1:2:99:", {12: (3, 0, 0, 0, False, True), 13: (0, 1, 2, 99, False, False)}),
        ("14:0:0:0:0:r", {14: (0, 0, 0, 0, True, False)}),
        ("15:x:0:0:0:,16:1:0:0:0", {}),
    ],
)
def test_told_verdicts_parse_the_entries_they_can(payload: str, told: dict[int, tuple[int, ...]]) -> None:
    parsed = {
        k: (v.placed, v.stopped, v.rejected_nodes, v.refresh_index, v.fenced, v.completed_eval)
        for k, v in plans.told_verdicts([payload]).items()
    }
    assert parsed == told


def test_no_verdict_while_the_plan_waits(engine: Engine) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    assert plans.result(engine, submit(engine, held, Plan(held.evaluation.id, 50, 0))) is None


def test_the_verdict_counts_placements_stops_and_rejected_nodes(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    roomy, full = insert_node(pg, cpu=2000, name="roomy"), insert_node(pg, cpu=600, name="full")
    first = Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(roomy): (alloc(held, roomy, 0),)})
    placed_id = submit(engine, held, first)
    assert apply(*term) == placed_id
    plan_id = submit(engine, held, replacing(held, first, roomy, full), attempt=2)
    assert apply(*term) == plan_id
    verdict = plans.result(engine, plan_id)
    assert verdict is not None
    assert (verdict.placed, verdict.stopped, verdict.rejected_nodes) == (2, 1, 1)
    assert verdict.partial and verdict.progress and not verdict.fenced and not verdict.completed_eval


def test_several_verdicts_are_read_in_one_statement_as_one_at_a_time(
    engine: Engine, pg: Conn, term: tuple[Leadership, int]
) -> None:
    """plans.results (a batch's waiter whose wait ended untold) says for each decided plan what
    plans.result says, and nothing for a plan still waiting."""
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    roomy, full = insert_node(pg, cpu=2000, name="roomy"), insert_node(pg, cpu=600, name="full")
    first = Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(roomy): (alloc(held, roomy, 0),)})
    placed_id = submit(engine, held, first)
    assert apply(*term) == placed_id
    partial_id = submit(engine, held, replacing(held, first, roomy, full), attempt=2)
    assert apply(*term) == partial_id
    waiting_id = submit(engine, held, Plan(held.evaluation.id, 50, 0), attempt=3)
    told = plans.results(engine, [placed_id, partial_id, waiting_id])
    assert told == {placed_id: plans.result(engine, placed_id), partial_id: plans.result(engine, partial_id)}
    assert (told[partial_id].placed, told[partial_id].stopped, told[partial_id].rejected_nodes) == (2, 1, 1)
    assert told[placed_id].placed == 1 and not told[placed_id].partial
    assert plans.results(engine, []) == {}


def test_a_due_completion_that_did_not_happen_undoes_the_batch_and_its_notification(
    engine: Engine, pg: Conn, database_url: str, term: tuple[Leadership, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The notification says a due plan completed its evaluation before the completion's answer
    is in. Should the completion ever not happen, nothing of the batch commits: no verdict is
    told, the plan stays pending."""
    from app.pipeline.plan_apply import applier

    register(engine, "web")
    held = claim(engine)
    assert held is not None
    monkeypatch.setattr(applier, "_send_completion", lambda pg, decided: None)  # completes nothing
    with psycopg.connect(libpq_url(database_url), autocommit=True) as listener:
        listener.execute("LISTEN corral_verdicts")
        plan_id = plans.submit(engine, held, 1, Plan(held.evaluation.id, 50, 0), "web", "default", COMPLETION)
        with pytest.raises(applier.VerdictMismatch, match=str(plan_id)):
            apply(*term)
        assert list(listener.notifies(timeout=1, stop_after=1)) == []
    assert pg.execute("SELECT status FROM plans WHERE id = %s", (plan_id,)).fetchone() == ("pending",)
    status = pg.execute("SELECT status FROM evaluations WHERE id = %s", (held.evaluation.id,)).fetchone()
    assert status == ("pending",)


@pytest.mark.parametrize(
    ("placed", "stopped", "rejected", "refresh", "refused", "completed"),
    [(3, 1, 0, 0, False, True), (0, 0, 2, 77, True, False), (0, 0, 0, 0, True, False)],
)
def test_a_told_entry_reads_back_as_the_verdict_it_encodes(
    placed: int, stopped: int, rejected: int, refresh: int, refused: bool, completed: bool
) -> None:
    applied = plans.verdict(
        placed=placed,
        stopped=stopped,
        rejected_nodes=rejected,
        refresh_index=refresh,
        refused=refused,
        completed_eval=completed,
    )
    assert plans.told_verdicts([plans.told_entry(9, applied, refused)]) == {9: applied}
