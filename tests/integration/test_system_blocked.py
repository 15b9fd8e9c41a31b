"""System blocked evaluations wait on their full nodes only (Nomad's per-node system blocked
evals and UnblockNode): capacity freed on another node, even in the same class, must not
release them, or a rolling system update's own stop releases the job's blocked evaluation and
the next node is updated without waiting for the stagger."""

from __future__ import annotations

import uuid
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import make_sessionmaker, transaction
from app.db.state_index import next_index
from app.jobspec import normalize_job
from app.pipeline import broker
from app.pipeline.broker import Outcome
from app.pipeline.plan_apply.applier import apply_next
from app.settings.config import Settings
from app.store.evaluation.blocked_evals import unblock_capacity
from app.store.job.jobs import RegisterOptions, register_job
from app.structs import PlacementMetrics
from app.values.ids import secret_hash
from app.wire.job import JobSpec
from tests.support.pipeline import claim, handling, register
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
CLASS = "v1:1"  # insert_node's computed class: every node here is in the same class
SECOND = 1_000_000_000


def block(
    engine: Engine, job_id: str, *, nodes: frozenset[uuid.UUID] = frozenset(), snapshot_index: int = 10**9
) -> None:
    """Claim the job's evaluation and complete it unable to place, waiting on `nodes`."""
    held = claim(engine)
    assert held is not None and held.evaluation.job_id == job_id
    outcome = Outcome(
        snapshot_index=snapshot_index,
        failed_tg_allocs={"g": PlacementMetrics()},
        class_eligibility={CLASS: True},
        blocked_nodes=nodes,
    )
    with transaction(make_sessionmaker(engine)) as session:
        broker.complete(session, held, outcome)


def capacity_on(engine: Engine, node_id: str) -> None:
    with transaction(make_sessionmaker(engine)) as session:
        unblock_capacity(session, {uuid.UUID(node_id): CLASS}, next_index(session, ["evaluations"]))


def blocked_status(pg: Conn, job_id: str) -> list[tuple[Any, ...]]:
    return pg.execute(
        "SELECT status, blocked_nodes FROM evaluations WHERE job_id = %s AND triggered_by = 'queued-allocs'",
        (job_id,),
    ).fetchall()


def test_a_system_blocked_eval_is_released_only_by_capacity_on_its_node(engine: Engine, pg: Conn) -> None:
    full, other = insert_node(pg, name="full"), insert_node(pg, name="other")
    register(engine, "sys", job_type="system")
    block(engine, "sys", nodes=frozenset({uuid.UUID(full)}))
    register(engine, "web")  # a service job blocked in the same class behaves as before
    block(engine, "web")
    assert blocked_status(pg, "sys") == [("blocked", [uuid.UUID(full)])]

    capacity_on(engine, other)
    assert blocked_status(pg, "sys") == [("blocked", [uuid.UUID(full)])]
    assert blocked_status(pg, "web") == [("pending", None)]

    capacity_on(engine, full)
    assert blocked_status(pg, "sys") == [("pending", [uuid.UUID(full)])]
    description = pg.execute("SELECT status_description FROM evaluations WHERE job_id = 'sys' AND status = 'pending'")
    assert description.fetchone() == ("unblocked: capacity changed on a node it waits on",)


def test_an_allocation_finishing_on_another_node_does_not_release_it(engine: Engine, pg: Conn) -> None:
    """The same through a real caller: a client reports an allocation complete on another node."""
    from app.store.client_allocs import AllocUpdate, update_allocations

    full, other = insert_node(pg, name="full"), insert_node(pg, name="other")
    pg.execute("UPDATE nodes SET secret_hash = %s", (secret_hash("s"),))
    eval_id = register(engine, "sys", job_type="system")
    alloc_id = insert_allocation(pg, other, eval_id, job_id="sys")
    block(engine, "sys", nodes=frozenset({uuid.UUID(full)}))
    with transaction(make_sessionmaker(engine)) as session:
        update_allocations(session, uuid.UUID(other), "s", [AllocUpdate(uuid.UUID(alloc_id), "complete")])
    assert pg.execute("SELECT client_status FROM allocations WHERE id = %s", (alloc_id,)).fetchone() == ("complete",)
    assert blocked_status(pg, "sys") == [("blocked", [uuid.UUID(full)])]


def test_missed_unblock_counts_only_the_nodes_it_waits_on(engine: Engine, pg: Conn) -> None:
    full, other = insert_node(pg, name="full"), insert_node(pg, name="other")
    register(engine, "sys", job_type="system")
    register(engine, "sys2", job_type="system")
    capacity_on(engine, other)  # after both passes' snapshots (index 1): a class unblock too
    block(engine, "sys", nodes=frozenset({uuid.UUID(full)}), snapshot_index=1)
    assert blocked_status(pg, "sys") == [("blocked", [uuid.UUID(full)])]
    capacity_on(engine, full)  # now its own node: the next block of a stale pass requeues at once
    block(engine, "sys2", nodes=frozenset({uuid.UUID(full)}), snapshot_index=1)
    assert blocked_status(pg, "sys2") == [("pending", [uuid.UUID(full)])]


def system_job(tag: str) -> JobSpec:
    return normalize_job(
        {
            "ID": "sys",
            "Type": "system",
            "Datacenters": ["dc1"],
            "Update": {"MaxParallel": 1, "Stagger": 10 * SECOND},
            "TaskGroups": [
                {
                    "Name": "g",
                    "Tasks": [
                        {
                            "Name": "t",
                            "Driver": "mock",
                            "Config": {"tag": tag},
                            "Resources": {"CPU": 500, "MemoryMB": 64},
                        }
                    ],
                }
            ],
        }
    )


def schedule_once(engine: Engine, pg: Conn, database_url: str) -> None:
    """One pass of a real worker over the next system evaluation, its plans applied here."""
    held = claim(engine, ("system",))
    assert held is not None
    with handling(engine, database_url, held, Settings(database_url=database_url)) as (thread, lead):
        assert lead.term is not None
        while thread.is_alive():
            if pg.execute("SELECT 1 FROM plans WHERE status = 'pending'").fetchone() is None:
                thread.join(0.02)
                continue
            with Session(bind=lead.connection) as session, session.begin():
                assert apply_next(session, lead.term) is not None


def test_rolling_system_update_waits_for_the_stagger_despite_a_blocked_eval(
    engine: Engine, pg: Conn, database_url: str
) -> None:
    nodes = [insert_node(pg, name=n, cpu=1000) for n in ("full", "b", "c")]
    pg.execute("""UPDATE nodes SET drivers = '{"mock": {"Detected": true, "Healthy": true}}'""")
    with transaction(make_sessionmaker(engine)) as session:
        hog_spec = {"ID": "hog", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}
        hog = register_job(session, normalize_job(hog_spec), RegisterOptions())
    insert_allocation(pg, nodes[0], str(hog.eval_id), job_id="hog", cpu=900)  # "full" cannot take 500 more

    with transaction(make_sessionmaker(engine)) as session:
        register_job(session, system_job("v0"), RegisterOptions())
    schedule_once(engine, pg, database_url)
    assert blocked_status(pg, "sys") == [("blocked", [uuid.UUID(nodes[0])])]

    with transaction(make_sessionmaker(engine)) as session:
        register_job(session, system_job("v1"), RegisterOptions())
    schedule_once(engine, pg, database_url)
    updated = pg.execute("SELECT count(*) FROM allocations WHERE job_id = 'sys' AND job_version = 1").fetchone()
    assert updated == (1,)  # max_parallel 1: one node this pass
    # The pass's own stop (on b or c) left the blocked eval waiting on "full" ...
    assert blocked_status(pg, "sys") == [("blocked", [uuid.UUID(nodes[0])])]
    # ... so nothing of the job is ready to run: the next node waits for the stagger follow-up.
    ready = pg.execute(
        "SELECT triggered_by FROM evaluations WHERE job_id = 'sys' AND status = 'pending' "
        "AND (wait_until IS NULL OR wait_until <= now())"
    )
    assert ready.fetchall() == []
    follow_up = pg.execute(
        "SELECT extract(epoch FROM wait_until - create_time)::float FROM evaluations "
        "WHERE job_id = 'sys' AND triggered_by = 'rolling-update'"
    )
    waits = [float(str(row[0])) for row in follow_up.fetchall()]
    assert len(waits) == 1 and waits[0] >= 9.99  # created with wait_until = now + stagger
    assert claim(engine, ("system",)) is None
