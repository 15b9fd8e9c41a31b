"""The batched applier (group commit) and the one-write-per-evaluation path: plans of one batch
are checked against what the plans before them took, one plan's refused writes do not fail the
others, a deposed applier's batch writes nothing, and an evaluation is completed exactly once,
never by a stale lease token."""

from __future__ import annotations

import uuid
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.leadership import Leadership
from app.pipeline import broker, plans
from app.pipeline.plan_apply.applier import Deposed, apply_batch
from app.pipeline.plan_apply.plan_writes import Checked
from app.structs import AllocationStop, Plan, Port
from app.wire.plan import CompletionJson
from tests.support.pipeline import alloc, claim, register, submit
from tests.support.rows import insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def batch(lead: Leadership, limit: int = 64) -> list[int]:
    assert lead.term is not None
    with Session(bind=lead.connection) as session, session.begin():
        return apply_batch(session, lead.term, limit)


def completion(snapshot_index: int = 0) -> CompletionJson:
    return {
        "SnapshotIndex": snapshot_index,
        "QueuedAllocations": {"g": 0},
        "ClassEligibility": {},
        "EscapedComputedClass": False,
        "ScheduledAt": datetime.now(UTC).isoformat(),
        "Description": "",
    }


def submit_with_completion(engine: Engine, held: broker.Claim, plan: Plan, attempt: int = 1) -> int:
    return plans.submit(engine, held, attempt, plan, held.evaluation.job_id, held.evaluation.namespace, completion())


def claimed(engine: Engine, job_id: str) -> broker.Claim:
    register(engine, job_id)
    held = claim(engine)
    assert held is not None and held.evaluation.job_id == job_id
    return held


def place(held: broker.Claim, node: str, index: int, cpu: int) -> Plan:
    return Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (alloc(held, node, index, cpu=cpu),)})


def test_two_plans_of_one_batch_cannot_overcommit_a_node_together(
    engine: Engine, pg: Conn, lead: Leadership, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.pipeline.plan_apply.applier as applier
    from app.pipeline.plan_apply.plan_writes import write_batch as real

    writes: list[int] = []

    def counted(session: Session, items: list[Checked], *rest: Any) -> None:
        writes.append(len(items))
        real(session, items, *rest)

    monkeypatch.setattr(applier, "write_batch", counted)
    node = insert_node(pg, cpu=1000)
    first, second = claimed(engine, "a"), claimed(engine, "b")
    first_id = submit(engine, first, place(first, node, 0, cpu=600))
    second_id = submit(engine, second, place(second, node, 0, cpu=600))  # each fits alone, not together
    assert batch(lead) == [first_id, second_id]  # one transaction
    accepted, rejected = plans.result(engine, first_id), plans.result(engine, second_id)
    assert accepted is not None and accepted.placed == 1 and not accepted.partial
    assert rejected is not None and rejected.placed == 0 and rejected.rejected_nodes == 1 and rejected.partial
    assert pg.execute("SELECT cpu FROM node_usage").fetchone() == (600,)
    # The check itself refused the second plan: the database's overcommit trigger (the backstop)
    # never had to refuse the batch's writes, which would have meant writing plan by plan.
    assert writes == [2]
    results = pg.execute("SELECT DISTINCT alloc_index FROM plan_results").fetchall()
    assert len(results) == 1  # both results were written by the same commit


def test_a_stop_earlier_in_the_batch_frees_room_for_a_later_plan(engine: Engine, pg: Conn, lead: Leadership) -> None:
    node = insert_node(pg, cpu=1000)
    old = claimed(engine, "old")
    old_plan = place(old, node, 0, cpu=800)
    submit(engine, old, old_plan)
    batch(lead)
    broker.complete_success(engine, old, broker.Outcome(snapshot_index=0))
    leaving = next(iter(old_plan.node_allocation.values()))[0].id
    stopper = claimed(engine, "old")  # a new evaluation of the same job stops its allocation
    stop = Plan(
        stopper.evaluation.id, 50, 0, node_update={uuid.UUID(node): (AllocationStop(leaving, "stop", "job stopped"),)}
    )
    newcomer = claimed(engine, "new")
    stop_id = submit(engine, stopper, stop)
    new_id = submit(engine, newcomer, place(newcomer, node, 0, cpu=800))
    assert batch(lead) == [stop_id, new_id]
    placed = plans.result(engine, new_id)
    assert placed is not None and placed.placed == 1 and not placed.partial
    assert pg.execute("SELECT cpu FROM node_usage").fetchone() == (800,)


def test_one_plan_refused_by_the_database_does_not_fail_the_batch(
    engine: Engine, pg: Conn, lead: Leadership, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.pipeline.plan_apply.plan_check as plan_check

    roomy, small = insert_node(pg, cpu=2000, name="roomy"), insert_node(pg, cpu=600, name="small")
    good, bad = claimed(engine, "good"), claimed(engine, "bad")
    good_id = submit(engine, good, place(good, roomy, 0, cpu=500))
    overflow = Plan(
        bad.evaluation.id,
        50,
        0,
        node_allocation={uuid.UUID(small): (alloc(bad, small, 0), alloc(bad, small, 1))},
    )
    bad_id = submit(engine, bad, overflow)
    # A broken fit check lets an overcommit through: the database's trigger refuses the writes.
    monkeypatch.setattr(plan_check, "exhausted_dimension", lambda *args: None)
    assert batch(lead) == [good_id, bad_id]
    kept, refused = plans.result(engine, good_id), plans.result(engine, bad_id)
    assert kept is not None and kept.placed == 1 and not kept.partial
    assert refused is not None and refused.placed == 0 and refused.partial
    assert pg.execute("SELECT job_id FROM allocations").fetchall() == [("good",)]
    assert pg.execute("SELECT status FROM plans ORDER BY id").fetchall() == [("applied",), ("rejected",)]


def test_a_deposed_appliers_batch_writes_nothing(engine: Engine, pg: Conn, lead: Leadership) -> None:
    node = insert_node(pg, cpu=4000)
    helds = [claimed(engine, f"job-{i}") for i in range(3)]
    for held in helds:
        submit_with_completion(engine, held, place(held, node, 0, cpu=100))
    pg.execute("UPDATE leader_terms SET term = term + 1 WHERE role = 'applier'")
    with pytest.raises(Deposed):
        batch(lead)
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (0,)
    assert pg.execute("SELECT count(*) FROM plan_results").fetchone() == (0,)
    assert pg.execute("SELECT DISTINCT status FROM plans").fetchall() == [("pending",)]
    assert pg.execute("SELECT DISTINCT status FROM evaluations").fetchall() == [("pending",)]


def test_the_applier_completes_the_evaluation_with_its_last_plan_exactly_once(
    engine: Engine, pg: Conn, lead: Leadership
) -> None:
    node = insert_node(pg, cpu=4000)
    held = claimed(engine, "web")
    plan_id = submit_with_completion(engine, held, place(held, node, 0, cpu=100))
    batch(lead)
    result = plans.result(engine, plan_id)
    assert result is not None and result.completed_eval and result.placed == 1
    row = pg.execute("SELECT status, lease_token, queued_allocations FROM evaluations").fetchone()
    assert row == ("complete", None, {"g": 0})
    # The worker's own completion would be a second one: the cleared token refuses it.
    with pytest.raises(broker.LeaseLost):
        broker.complete_success(engine, held, broker.Outcome(snapshot_index=0))


def test_a_partial_plan_leaves_the_completion_to_the_worker(engine: Engine, pg: Conn, lead: Leadership) -> None:
    roomy, full = insert_node(pg, cpu=2000, name="roomy"), insert_node(pg, cpu=100, name="full")
    held = claimed(engine, "web")
    plan = Plan(
        held.evaluation.id,
        50,
        0,
        node_allocation={uuid.UUID(roomy): (alloc(held, roomy, 0),), uuid.UUID(full): (alloc(held, full, 1),)},
    )
    plan_id = submit_with_completion(engine, held, plan)
    batch(lead)
    result = plans.result(engine, plan_id)
    assert result is not None and result.partial and not result.completed_eval
    assert pg.execute("SELECT status FROM evaluations").fetchone() == ("pending",)
    broker.complete_success(engine, held, broker.Outcome(snapshot_index=0))  # the worker still can
    assert pg.execute("SELECT status FROM evaluations").fetchone() == ("complete",)


def test_a_stale_token_never_completes_the_evaluation(engine: Engine, pg: Conn, lead: Leadership) -> None:
    node = insert_node(pg, cpu=4000)
    stale = claimed(engine, "web")
    stale_id = submit_with_completion(engine, stale, place(stale, node, 0, cpu=100))
    pg.execute("UPDATE evaluations SET lease_expires_at = now() - interval '1 second'")
    rescuer = claim(engine)  # the lapsed lease is rescued before the applier gets to the plan
    assert rescuer is not None and rescuer.token != stale.token
    batch(lead)
    refused = plans.result(engine, stale_id)
    assert refused is not None and refused.fenced and not refused.completed_eval
    row = pg.execute("SELECT status, lease_token FROM evaluations").fetchone()
    assert row == ("pending", rescuer.token)
    assert pg.execute("SELECT count(*) FROM allocations").fetchone() == (0,)
    rescued_id = submit_with_completion(engine, rescuer, place(rescuer, node, 0, cpu=100))
    batch(lead)
    rescued = plans.result(engine, rescued_id)
    assert rescued is not None and rescued.completed_eval
    assert pg.execute("SELECT status FROM evaluations").fetchone() == ("complete",)


def test_batch_limit_one_applies_one_plan_per_transaction(engine: Engine, pg: Conn, lead: Leadership) -> None:
    node = insert_node(pg, cpu=4000)
    ids = []
    for i in range(3):
        held = claimed(engine, f"job-{i}")
        ids.append(submit_with_completion(engine, held, place(held, node, 0, cpu=100)))
    assert [batch(lead, limit=1) for _ in range(4)] == [[ids[0]], [ids[1]], [ids[2]], []]
    commits = pg.execute("SELECT count(DISTINCT alloc_index) FROM plan_results").fetchone()
    assert commits == (3,)
    assert pg.execute("SELECT DISTINCT status FROM evaluations").fetchall() == [("complete",)]


def test_copied_allocations_keep_their_ports_preemptions_and_resources(
    engine: Engine, pg: Conn, lead: Leadership
) -> None:
    node = insert_node(pg, cpu=4000)
    held = claimed(engine, "web")
    victim = uuid.uuid4()
    placed = replace(
        alloc(held, node, 0, cpu=100),
        ports=(Port("http", 8080, 80, "default\\lan"), Port("admin", 9090)),
        preempted_allocations=(victim,),
    )
    submit(engine, held, Plan(held.evaluation.id, 50, 0, node_allocation={uuid.UUID(node): (placed,)}))
    batch(lead)
    row = pg.execute("SELECT host_ports, preempted_allocations, allocated_resources FROM allocations").fetchone()
    assert row == (
        [8080, 9090],
        [victim],
        {
            "Shared": {
                "DiskMB": 10,
                "Ports": [
                    {"Label": "http", "Value": 8080, "To": 80, "HostNetwork": "default\\lan"},
                    {"Label": "admin", "Value": 9090, "To": 0, "HostNetwork": "default"},
                ],
            }
        },
    )


def test_copied_allocations_keep_every_character_of_their_text_columns(
    engine: Engine, pg: Conn, lead: Leadership
) -> None:
    """The COPY rows are encoded by hand (plan_writes.copy_row): a tab, a newline, a carriage
    return or a backslash in a value must arrive as written, and absent values as NULL."""
    node = insert_node(pg, cpu=4000)
    held = claimed(engine, "web")
    awkward = "a\tb\nc\rd\\e\\N 'f' \"g\" {h}"
    previous = uuid.uuid4()
    tracker: Any = {"Events": [{"Delay": 5, "Note": "tab\there \\ back"}]}  # a tracker of any shape
    odd = replace(
        alloc(held, node, 0, cpu=100),
        name=awkward,
        node_name="node\t1",
        task_group="g\\1",
        previous_allocation=previous,
        reschedule_tracker=tracker,
        canary=True,
    )
    plain = alloc(held, node, 1, cpu=100)
    placement = {uuid.UUID(node): (odd, plain)}
    submit(engine, held, Plan(held.evaluation.id, 50, 0, node_allocation=placement))
    batch(lead)
    rows = pg.execute(
        "SELECT name, node_name, task_group, previous_allocation, reschedule_tracker, deployment_status, "
        "deployment_id, create_index = modify_index AND modify_index = alloc_modify_index, create_time = modify_time "
        "FROM allocations ORDER BY id = %s DESC",
        (odd.id,),
    ).fetchall()
    assert rows[0] == (awkward, "node\t1", "g\\1", previous, tracker, {"Canary": True}, None, True, True)
    assert rows[1][:7] == (plain.name, plain.node_name, "g", None, None, None, None)
