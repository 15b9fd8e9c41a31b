"""The evaluation broker against a real database: order, leases, fencing, coalescing, back-off."""

from __future__ import annotations

import uuid
from datetime import timedelta

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.engines import make_sessionmaker, transaction
from app.leader import eval_sweeps
from app.pipeline import broker
from app.pipeline.broker import DELIVERY_LIMIT, LeaseLost, Outcome
from app.store.evaluation.blocked_evals import unblock_capacity
from app.store.job.jobs import deregister_job
from tests.support.pipeline import claim, register
from tests.support.rows import pairs

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def test_claims_by_priority_then_age(engine: Engine) -> None:
    low, high, low2 = register(engine, "a", 30), register(engine, "b", 90), register(engine, "c", 30)
    order = [str(c.evaluation.id) for c in (claim(engine), claim(engine), claim(engine)) if c]
    assert order == [high, low, low2]
    assert claim(engine) is None


def test_scheduler_types_filter(engine: Engine) -> None:
    register(engine, "svc")
    batch = register(engine, "bat", job_type="batch")
    held = claim(engine, ("batch",))
    assert held is not None and str(held.evaluation.id) == batch
    assert claim(engine, ("batch",)) is None


def test_one_evaluation_per_job_in_flight(engine: Engine) -> None:
    register(engine, "web")
    register(engine, "web")
    first = claim(engine)
    assert first is not None
    assert claim(engine) is None  # the second eval of "web" waits behind the first


def test_complete_coalesces_older_pending_evals_of_the_job(engine: Engine, pg: Conn) -> None:
    first = register(engine, "web")
    held = claim(engine)
    assert held is not None and str(held.evaluation.id) == first
    for _ in range(5):
        register(engine, "web")
    safe = pg.execute("SELECT state_index_safe()").fetchone()
    assert safe is not None and isinstance(safe[0], int)
    snapshot_index = safe[0]
    late = register(engine, "web")
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, Outcome(snapshot_index=snapshot_index))
    rows = pairs(pg.execute("SELECT status, count(*) FROM evaluations GROUP BY status").fetchall())
    assert rows == {"complete": 1, "canceled": 5, "pending": 1}
    reason = pg.execute("SELECT DISTINCT status_description FROM evaluations WHERE status = 'canceled'").fetchall()
    assert reason == [(f"coalesced into evaluation {first}",)]
    nxt = claim(engine)
    assert nxt is not None and str(nxt.evaluation.id) == late


def test_completion_is_fenced_by_the_token(engine: Engine) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    stale = broker.Claim(held.evaluation, uuid.uuid4(), held.delivery_count)
    with pytest.raises(LeaseLost), transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, stale, Outcome(snapshot_index=0))


def test_expired_lease_is_rescued_by_another_worker(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    first = claim(engine, lease_s=60)
    assert first is not None
    pg.execute("UPDATE evaluations SET lease_expires_at = now() - interval '1 second'")
    rescued = claim(engine)
    assert rescued is not None and rescued.evaluation.id == first.evaluation.id and rescued.token != first.token
    assert rescued.delivery_count == 2
    assert not broker.renew(engine, first, 60)  # the old worker is fenced out
    assert broker.renew(engine, rescued, 60)


def test_nack_backs_off_like_nomad(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    with transaction(make_sessionmaker(engine)) as session:
        broker.nack(session, held, "boom")
    delay = pg.execute("SELECT not_before - now(), lease_token FROM evaluations").fetchone()
    assert delay is not None and isinstance(delay[0], timedelta)
    assert timedelta(seconds=0) < delay[0] <= timedelta(seconds=1) and delay[1] is None
    assert claim(engine) is None  # still backing off
    assert broker.nack_delay(1) == timedelta(seconds=1)
    assert broker.nack_delay(2) == timedelta(seconds=20)
    assert broker.nack_delay(3) == timedelta(seconds=40)


def test_delivery_limit_fails_with_follow_up(engine: Engine, pg: Conn) -> None:
    first = register(engine, "web")
    pg.execute("UPDATE evaluations SET delivery_count = %s", (DELIVERY_LIMIT - 1,))
    held = claim(engine)
    assert held is not None and held.delivery_count == DELIVERY_LIMIT
    with transaction(make_sessionmaker(engine)) as session:
        broker.nack(session, held, "boom")
    failed = pg.execute(
        "SELECT status, status_description, next_eval::text FROM evaluations WHERE id = %s", (first,)
    ).fetchone()
    assert failed is not None and failed[0] == "failed" and "delivery limit (3)" in str(failed[1])
    follow = pg.execute(
        "SELECT triggered_by, status, previous_eval::text, not_before - now() FROM evaluations WHERE id = %s::uuid",
        (failed[2],),
    ).fetchone()
    assert follow is not None and follow[:3] == ("failed-follow-up", "pending", first)
    assert isinstance(follow[3], timedelta) and timedelta(seconds=55) < follow[3] <= timedelta(minutes=6)


def test_no_follow_up_for_a_purged_job(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    pg.execute("UPDATE evaluations SET delivery_count = %s", (DELIVERY_LIMIT - 1,))
    held = claim(engine)
    assert held is not None
    with transaction(make_sessionmaker(engine)) as session:
        deregister_job(session, "default", "web", purge=True, eval_priority=None)
    with transaction(make_sessionmaker(engine)) as session:
        broker.nack(session, held, "boom")
    assert pg.execute("SELECT count(*) FROM evaluations WHERE triggered_by = 'failed-follow-up'").fetchone() == (0,)


def test_leader_reaps_leases_that_lapsed_at_the_limit(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    pg.execute("UPDATE evaluations SET delivery_count = %s", (DELIVERY_LIMIT - 1,))
    assert claim(engine) is not None
    pg.execute("UPDATE evaluations SET lease_expires_at = now() - interval '1 second'")
    assert claim(engine) is None  # over the limit: no worker rescues it
    with transaction(make_sessionmaker(engine)) as session:
        assert eval_sweeps.reap_over_limit(session) == 1
    statuses = sorted(pg.execute("SELECT status, triggered_by FROM evaluations").fetchall())
    assert statuses == [("failed", "job-register"), ("pending", "failed-follow-up")]


def test_pause_and_wait_until(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    pg.execute("UPDATE scheduler_config SET pause_eval_broker = true")
    assert claim(engine) is None
    pg.execute("UPDATE scheduler_config SET pause_eval_broker = false")
    pg.execute("UPDATE evaluations SET wait_until = now() + interval '1 hour'")
    assert claim(engine) is None
    pg.execute("UPDATE evaluations SET wait_until = now() - interval '1 second'")
    assert claim(engine) is not None


def test_blocked_eval_is_one_per_job_and_canceled_by_success(engine: Engine, pg: Conn) -> None:
    from app.structs import PlacementMetrics

    register(engine, "web")
    failing = Outcome(
        snapshot_index=10**9,
        failed_tg_allocs={"g": PlacementMetrics(nodes_evaluated=1)},
        queued_allocations={"g": 2},
        class_eligibility={"v1:1": True},
    )
    for _ in range(2):
        held = claim(engine)
        assert held is not None
        with transaction(make_sessionmaker(engine)) as session:
            broker.complete(session, held, failing)
        register(engine, "web")
    blocked = pg.execute("SELECT count(*), min(triggered_by) FROM evaluations WHERE status = 'blocked'").fetchone()
    assert blocked == (1, "queued-allocs")
    held = claim(engine)
    assert held is not None
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, Outcome(snapshot_index=10**9))
    assert pg.execute("SELECT count(*) FROM evaluations WHERE status = 'blocked'").fetchone() == (0,)


def test_capacity_in_an_eligible_class_unblocks(engine: Engine, pg: Conn) -> None:
    from app.db.state_index import next_index
    from app.structs import PlacementMetrics

    register(engine, "web")
    held = claim(engine)
    assert held is not None
    outcome = Outcome(
        snapshot_index=10**9,
        failed_tg_allocs={"g": PlacementMetrics()},
        class_eligibility={"v1:bad": False, "v1:good": True},
    )
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, outcome)
    with transaction(make_sessionmaker(engine)) as session:
        unblock_capacity(session, {uuid.uuid4(): "v1:bad"}, next_index(session, ["evaluations"]))
    assert pg.execute("SELECT count(*) FROM evaluations WHERE status = 'blocked'").fetchone() == (1,)
    with transaction(make_sessionmaker(engine)) as session:
        unblock_capacity(session, {uuid.uuid4(): "v1:new-class"}, next_index(session, ["evaluations"]))
    assert pg.execute("SELECT count(*) FROM evaluations WHERE status = 'blocked'").fetchone() == (0,)


def test_missed_unblock_requeues_at_block_time(engine: Engine, pg: Conn) -> None:
    from app.db.state_index import next_index
    from app.structs import PlacementMetrics

    register(engine, "web")
    held = claim(engine)
    assert held is not None
    with transaction(make_sessionmaker(engine)) as session:
        unblock_capacity(session, {uuid.uuid4(): "v1:good"}, next_index(session, ["evaluations"]))
    outcome = Outcome(snapshot_index=1, failed_tg_allocs={"g": PlacementMetrics()}, class_eligibility={"v1:good": True})
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, outcome)
    row = pg.execute("SELECT status, triggered_by FROM evaluations WHERE triggered_by = 'queued-allocs'").fetchone()
    assert row == ("pending", "queued-allocs")


def test_node_registration_and_eligibility_release_blocked_evals(engine: Engine, pg: Conn) -> None:
    from app.store.node.nodes import NodeRegistration, register_node, set_eligibility
    from app.structs import PlacementMetrics

    register(engine, "web")
    held = claim(engine)
    assert held is not None
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, Outcome(snapshot_index=10**9, failed_tg_allocs={"g": PlacementMetrics()}))
    node = NodeRegistration(
        id=uuid.uuid4(),
        secret_id=None,
        name="n1",
        datacenter="dc1",
        node_class="",
        node_pool="default",
        status="ready",
        attributes={},
        meta={},
        drivers={},
        cpu_shares=1000,
        memory_mb=1024,
        disk_mb=1000,
    )
    with transaction(make_sessionmaker(engine)) as session:
        register_node(session, node)
    assert pg.execute("SELECT status FROM evaluations WHERE triggered_by = 'queued-allocs'").fetchone() == ("pending",)
    held = claim(engine)
    assert held is not None
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, Outcome(snapshot_index=10**9, failed_tg_allocs={"g": PlacementMetrics()}))
    assert pg.execute("SELECT status FROM evaluations WHERE triggered_by = 'queued-allocs'").fetchone() == ("blocked",)
    with transaction(make_sessionmaker(engine)) as session:
        set_eligibility(session, node.id, "ineligible")
    with transaction(make_sessionmaker(engine)) as session:
        set_eligibility(session, node.id, "eligible")
    assert pg.execute("SELECT status FROM evaluations WHERE triggered_by = 'queued-allocs'").fetchone() == ("pending",)


def test_fast_completion_coalesces_and_is_fenced(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    register(engine, "web")
    register(engine, "other")
    index = pg.execute("SELECT state_index_safe()").fetchone()
    assert index is not None and isinstance(index[0], int)
    stale = broker.Claim(held.evaluation, uuid.uuid4(), held.delivery_count)
    with pytest.raises(LeaseLost):
        broker.complete_success(engine, stale, Outcome(snapshot_index=index[0]))
    broker.complete_success(engine, held, Outcome(snapshot_index=index[0]))
    rows = sorted(pg.execute("SELECT job_id, status FROM evaluations").fetchall())
    assert rows == [("other", "pending"), ("web", "canceled"), ("web", "complete")]
    after = pg.execute("SELECT max(value) FROM state_index WHERE name = 'evaluations'").fetchone()
    assert after is not None and isinstance(after[0], int) and after[0] > index[0]
    with pytest.raises(ValueError):
        broker.complete_success(engine, held, Outcome(snapshot_index=0, max_plan_attempts=True))


def test_fast_completion_is_one_transaction_with_its_index_bump(engine: Engine, pg: Conn) -> None:
    """The pipelined completion sends no COMMIT: its two statements share the implicit
    transaction of the pipeline's Sync, so a failing completion takes its index bump with it."""
    register(engine, "web")
    held = claim(engine)
    assert held is not None
    pg.execute(
        "CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'completion refused'; END $$"
    )
    pg.execute(
        "CREATE TRIGGER refuse_completion BEFORE UPDATE ON evaluations FOR EACH ROW "
        "WHEN (NEW.status = 'complete') EXECUTE FUNCTION refuse()"
    )
    indexes = "SELECT name, value FROM state_index ORDER BY name"
    before = pg.execute(indexes).fetchall()
    with pytest.raises(psycopg.errors.RaiseException):
        broker.complete_success(engine, held, Outcome(snapshot_index=0))
    assert pg.execute(indexes).fetchall() == before
    pg.execute("DROP TRIGGER refuse_completion ON evaluations")
    broker.complete_success(engine, held, Outcome(snapshot_index=0))  # the connection is usable again
    assert pg.execute("SELECT status FROM evaluations").fetchall() == [("complete",)]
    assert pg.execute(indexes).fetchall() != before


def test_releasing_a_blocked_eval_resets_its_deliveries(engine: Engine, pg: Conn) -> None:
    from app.db.state_index import next_index
    from app.structs import PlacementMetrics

    register(engine, "web")
    held = claim(engine)
    assert held is not None
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, Outcome(snapshot_index=10**9, failed_tg_allocs={"g": PlacementMetrics()}))
    pg.execute("UPDATE evaluations SET delivery_count = 3 WHERE status = 'blocked'")
    with transaction(make_sessionmaker(engine)) as session:
        unblock_capacity(session, {uuid.uuid4(): "v1:any"}, next_index(session, ["evaluations"]))
    assert pg.execute(
        "SELECT status, delivery_count FROM evaluations WHERE triggered_by = 'queued-allocs'"
    ).fetchone() == (
        "pending",
        0,
    )


@pytest.mark.parametrize("fast", [True, False])
def test_delayed_eval_due_after_the_pass_started_is_not_coalesced(engine: Engine, pg: Conn, fast: bool) -> None:
    from datetime import UTC, datetime

    register(engine, "web")
    held = claim(engine)
    assert held is not None
    delayed = register(engine, "web")
    pg.execute("UPDATE evaluations SET wait_until = now() - interval '1 second' WHERE id = %s", (delayed,))
    outcome = Outcome(snapshot_index=10**9, scheduled_at=datetime.now(UTC) - timedelta(seconds=10))
    if fast:
        broker.complete_success(engine, held, outcome)
    else:
        with transaction(make_sessionmaker(engine)) as session:
            broker.complete(session, held, outcome)
    assert pg.execute("SELECT status FROM evaluations WHERE id = %s", (delayed,)).fetchone() == ("pending",)
