"""What the worker's pipelined snapshot reads: every live allocation's resources and host ports
per node (terminal ones not), the job's older versions its allocations still run, the same
through `read_snapshot` inside a caller's transaction (job plan), usage objects reused only
while their node's row is unchanged, and a worker's usage cache that reads only the rows changed
since its previous snapshot without ever missing a change committed late."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.engines import autocommitted, libpq_url, make_engine
from app.pipeline.snapshot import BEGIN_SNAPSHOT, SnapshotLoader, UsageCache, read_snapshot
from app.structs import Evaluation, NodeUsage, Resources
from tests.support.pipeline import register
from tests.support.rows import insert_allocation, insert_deployment, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def evaluation(job_id: str = "web") -> Evaluation:
    return Evaluation(uuid.uuid4(), "default", job_id, "service", 50, "job-register", 1)


def with_ports(pg: Conn, alloc_id: str, ports: list[int]) -> None:
    pg.execute("UPDATE allocations SET host_ports = %s WHERE id = %s", (ports, alloc_id))


def test_usage_counts_every_live_allocation_with_its_ports(engine: Engine, pg: Conn) -> None:
    eval_id = register(engine, "web")
    busy, idle, done = (insert_node(pg, cpu=4000, name=n) for n in ("busy", "idle", "done"))
    with_ports(pg, insert_allocation(pg, busy, eval_id, cpu=500), [8080])
    with_ports(pg, insert_allocation(pg, busy, eval_id, cpu=300, client_status="pending"), [9090, 8080])
    with_ports(pg, insert_allocation(pg, done, eval_id, cpu=700, client_status="complete"), [7070])
    usage = SnapshotLoader(engine).load(evaluation()).usage
    assert usage == {
        uuid.UUID(busy): NodeUsage(Resources(cpu=800, memory_mb=512, disk_mb=600), frozenset({8080, 9090})),
    }
    assert uuid.UUID(idle) not in usage and uuid.UUID(done) not in usage


def test_the_job_plan_path_reads_the_same_snapshot(engine: Engine, pg: Conn) -> None:
    eval_id = register(engine, "web")
    node = insert_node(pg)
    with_ports(pg, insert_allocation(pg, node, eval_id), [8080])
    ev = evaluation()
    loaded = SnapshotLoader(engine).load(ev)
    with engine.connect().execution_options(isolation_level="REPEATABLE READ") as conn, conn.begin():
        read = read_snapshot(conn, ev)
    assert read == loaded
    assert loaded.job is not None and len(loaded.allocations) == 1 and len(loaded.nodes) == 1


def test_older_versions_still_running_come_with_the_snapshot(engine: Engine, pg: Conn) -> None:
    eval_id = register(engine, "web", priority=50)
    insert_allocation(pg, insert_node(pg), eval_id)  # runs version 0
    register(engine, "web", priority=60)  # version 1
    snapshot = SnapshotLoader(engine).load(evaluation())
    assert snapshot.job is not None and snapshot.job.version == 1
    assert set(snapshot.job_versions) == {0}
    assert snapshot.job_versions[0].priority == 50


def test_a_batch_deals_each_job_its_own_rows(engine: Engine, pg: Conn) -> None:
    # One statement per kind reads every job of a batch: each snapshot must get its own job's
    # allocations, older versions and latest deployment, none of another's; a job that is not
    # there gets none, wherever it stands in the batch.
    node = insert_node(pg)
    evals = {name: register(engine, name, priority=50) for name in ("a", "b", "c")}
    for name, allocations in (("a", 2), ("c", 1)):
        for _ in range(allocations):
            insert_allocation(pg, node, evals[name], job_id=name)  # version 0
    register(engine, "c", priority=70)  # version 1: c's allocation runs version 0
    insert_deployment(pg, job_id="b", create_index=10)
    latest = insert_deployment(pg, job_id="b", create_index=20)
    batch = [evaluation("c"), evaluation("gone"), evaluation("a"), evaluation("b")]
    c, gone, a, b = SnapshotLoader(engine).load_batch(batch)
    assert [s.job.id if s.job else None for s in (c, gone, a, b)] == ["c", None, "a", "b"]
    assert [sorted({x.job_id for x in s.allocations}) for s in (c, gone, a, b)] == [["c"], [], ["a"], []]
    assert (len(a.allocations), len(c.allocations)) == (2, 1)
    assert set(c.job_versions) == {0} and c.job_versions[0].priority == 50
    assert a.job_versions == {} and b.job_versions == {} and gone.job_versions == {}
    assert b.deployment is not None and str(b.deployment.id) == latest
    assert a.deployment is None and c.deployment is None and gone.deployment is None
    # Each is what a snapshot of that evaluation alone reads.
    for together, ev in zip((c, gone, a, b), batch, strict=True):
        alone = SnapshotLoader(engine).load(ev)
        assert (together.job, together.allocations, together.job_versions, together.deployment) == (
            alone.job,
            alone.allocations,
            alone.job_versions,
            alone.deployment,
        )


def test_the_batch_reads_keep_their_generic_plans(engine: Engine, pg: Conn, database_url: str) -> None:
    # Postgres's cost model never picked the generic plan of a read over an array of jobs, so
    # it planned each anew on every call; the snapshot's transaction forces the generic plans
    # (an index probe per job). One pooled connection, so every load shares its statements.
    for name in ("a", "b"):
        register(engine, name)
    one = make_engine(database_url, "worker", pool_size=1, max_overflow=0)
    try:
        loader = SnapshotLoader(one)
        for _ in range(12):  # psycopg prepares a statement on its fifth execution
            loader.load_batch([evaluation("a"), evaluation("b")])
        with autocommitted(one) as raw:
            plans = raw.execute(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
                ("%WITH ORDINALITY AS k (namespace, job_id, o)%",),
            ).fetchall()
            preemptible = raw.execute(
                "SELECT custom_plans FROM pg_prepared_statements WHERE statement LIKE %s",
                ("%Live allocations of other jobs%",),
            ).fetchone()
    finally:
        one.dispose()
    assert len(plans) == 5  # jobs, allocations, versions used, deployment, volume claims
    assert all(generic > 0 and custom == 0 for generic, custom in plans), plans
    # Only those: the per-job reads sent before them keep Postgres's own choice (custom plans
    # for the first few calls).
    assert preemptible is not None and preemptible[0] > 0
    assert SnapshotLoader(engine).load_batch([]) == []


def test_usage_objects_are_reused_only_while_the_row_is_unchanged(engine: Engine, pg: Conn) -> None:
    eval_id = register(engine, "web")
    first_node, second_node = insert_node(pg, name="a"), insert_node(pg, name="b")
    insert_allocation(pg, first_node, eval_id, cpu=100)
    insert_allocation(pg, second_node, eval_id, cpu=100)
    loader = SnapshotLoader(engine)
    a, b = uuid.UUID(first_node), uuid.UUID(second_node)
    before = loader.load(evaluation()).usage
    insert_allocation(pg, second_node, eval_id, cpu=250)
    after = loader.load(evaluation()).usage
    assert after[a] is before[a]
    assert after[b] is not before[b] and after[b].resources.cpu == 350


def test_preemptible_work_is_read_only_when_preemption_is_on_for_the_type(engine: Engine, pg: Conn) -> None:
    low_eval = register(engine, "low", priority=20)
    node = insert_node(pg, cpu=1000)
    victim = insert_allocation(pg, node, low_eval, job_id="low", cpu=1000)
    register(engine, "web", priority=80)
    loader = SnapshotLoader(engine)
    assert loader.load(evaluation()).preemptible == {}  # Nomad's default: off for service jobs
    pg.execute("UPDATE scheduler_config SET preemption_service = true WHERE id = 1")
    preemptible = loader.load(evaluation()).preemptible
    assert [r.alloc.id for r in preemptible[uuid.UUID(node)]] == [uuid.UUID(victim)]
    assert preemptible[uuid.UUID(node)][0].job_priority == 20
    register(engine, "web", priority=25)  # within PRIORITY_DELTA of the victim's job: nothing
    assert loader.load(evaluation()).preemptible == {}


def test_a_failed_read_leaves_the_pooled_connection_as_it_found_it(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    loader = SnapshotLoader(engine)
    with pytest.raises(psycopg.errors.UndefinedTable), autocommitted(engine) as raw, raw.pipeline():
        raw.execute(BEGIN_SNAPSHOT)
        raw.execute("SELECT * FROM no_such_table")
    with engine.connect() as conn:  # the pool's only idle connection: the one that failed
        raw_after = conn.connection.driver_connection
        assert raw_after is not None and not raw_after.autocommit
        assert raw_after.info.transaction_status == psycopg.pq.TransactionStatus.IDLE
    assert loader.load(evaluation()).job is not None


def usage_rows_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many node_usage rows each snapshot of the test read."""
    counts: list[int] = []
    decode = UsageCache.decode

    def counting(
        self: UsageCache, safe: int, rows: list[tuple[object, ...]], ports: list[tuple[object, ...]]
    ) -> object:
        counts.append(len(rows))
        return decode(self, safe, rows, ports)

    monkeypatch.setattr(UsageCache, "decode", counting)
    return counts


def test_later_snapshots_read_only_the_usage_rows_changed_since(
    engine: Engine, pg: Conn, monkeypatch: pytest.MonkeyPatch
) -> None:
    eval_id = register(engine, "web")
    nodes = [insert_node(pg, name=f"n{i}") for i in range(5)]
    for node in nodes:
        insert_allocation(pg, node, eval_id, cpu=100)
    counts, loader = usage_rows_read(monkeypatch), SnapshotLoader(engine)
    first = loader.load(evaluation()).usage
    unchanged = loader.load(evaluation()).usage
    insert_allocation(pg, nodes[0], eval_id, cpu=50)
    changed = loader.load(evaluation()).usage
    assert counts == [5, 0, 1]
    assert first == unchanged and changed == {**first, uuid.UUID(nodes[0]): NodeUsage(Resources(150, 512, 600))}
    assert changed == SnapshotLoader(engine).load(evaluation()).usage  # a fresh loader reads it all alike


def test_a_change_committed_after_a_later_one_is_still_read(engine: Engine, pg: Conn, database_url: str) -> None:
    """Transaction A changes a node's usage and stays open; B, begun after it, changes another's
    and commits; a snapshot sees B's. When A commits, the next snapshot must read A's row, though
    A's index is lower than B's: the cache resumes from the safe index (below every transaction
    still open), not from the highest index it has seen."""
    eval_id = register(engine, "web")
    slow_node, quick_node = insert_node(pg, name="slow"), insert_node(pg, name="quick")
    loader = SnapshotLoader(engine)
    assert loader.load(evaluation()).usage == {}
    with psycopg.connect(libpq_url(database_url)) as slow:
        insert_allocation(slow, slow_node, eval_id, cpu=700)  # A: open, not committed
        insert_allocation(pg, quick_node, eval_id, cpu=300)  # B: committed
        seen = loader.load(evaluation()).usage
        assert set(seen) == {uuid.UUID(quick_node)}
        slow.commit()
    usage = loader.load(evaluation()).usage
    assert usage[uuid.UUID(slow_node)].resources.cpu == 700 and usage[uuid.UUID(quick_node)].resources.cpu == 300


def test_a_node_whose_last_allocation_ends_or_that_is_deleted_drops_out(engine: Engine, pg: Conn) -> None:
    eval_id = register(engine, "web")
    ending, deleted, staying = (insert_node(pg, name=n) for n in ("ending", "deleted", "staying"))
    last = insert_allocation(pg, ending, eval_id)
    for node in (deleted, staying):
        insert_allocation(pg, node, eval_id)
    loader = SnapshotLoader(engine)
    assert len(loader.load(evaluation()).usage) == 3
    pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (last,))
    assert set(loader.load(evaluation()).usage) == {uuid.UUID(deleted), uuid.UUID(staying)}
    with pg.transaction():  # as node GC does: its allocations, then the node, whose usage row goes unreported
        pg.execute("DELETE FROM allocations WHERE node_id = %s", (deleted,))
        pg.execute("DELETE FROM nodes WHERE id = %s", (deleted,))
        pg.execute("INSERT INTO state_index (name, value) VALUES ('nodes', state_index_own())")
    assert set(loader.load(evaluation()).usage) == {uuid.UUID(staying)}
