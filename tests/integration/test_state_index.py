"""The state index: a write's index is its transaction's own, logged per table without a lock;
readers report only indexes at or below their snapshot's safe index."""

from __future__ import annotations

import psycopg
import pytest
from alembic import command
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from app.db.engines import libpq_url
from app.db.schema import alembic_config, upgrade
from app.db.state_index import all_indexes, compact, current_index, next_index, safe_index
from app.store.sql import psycopg_query

pytestmark = pytest.mark.integration

Conn = psycopg.Connection[tuple[object, ...]]


def test_next_index_is_the_transactions_own_and_stamps_the_tables(engine: Engine, pg: Conn) -> None:
    with Session(engine) as session:
        before = all_indexes(session)
    with Session(engine) as session, session.begin():
        index = next_index(session, ["jobs", "evaluations", "jobs"])
        assert next_index(session, ["jobs"]) == index  # twice in one transaction: the same index
        own = session.execute(text("SELECT state_index_own()")).scalar_one()
    with Session(engine) as session:
        after = all_indexes(session)
    assert index == own > before["_global"]
    assert after["_global"] == after["jobs"] == after["evaluations"] == index
    assert after["nodes"] == before["nodes"]
    assert pg.execute("SELECT count(*) FROM state_index WHERE value = %s", (index,)).fetchone() == (2,)


def test_next_index_after_another_write_is_that_writes_index(engine: Engine) -> None:
    """No lock order to keep: the index is the transaction ID its first write was given."""
    with Session(engine) as session, session.begin():
        session.execute(text("UPDATE scheduler_config SET modify_index = modify_index"))
        first = session.execute(text("SELECT state_index_own()")).scalar_one()
        assert next_index(session, ["scheduler_config"]) == first


def test_unknown_table_name_is_refused(engine: Engine) -> None:
    with Session(engine) as session, session.begin(), pytest.raises(RuntimeError, match="not state index names"):
        next_index(session, ["jobs", "no_such_table"])


def test_a_reader_reports_nothing_above_an_unfinished_lower_index(engine: Engine, database_url: str) -> None:
    """Writer A takes its index and stays open; B takes a higher one and commits. A reader sees
    B's change but reports an index below A's, so a query chained on it still wakes for A."""
    url = libpq_url(database_url)
    with psycopg.connect(url) as a, psycopg.connect(url, autocommit=True) as b:
        low = a.execute("SELECT state_index_own()").fetchone()
        b.execute("INSERT INTO state_index (name, value) VALUES ('jobs', state_index_own())")
        high = b.execute("SELECT max(value) FROM state_index WHERE name = 'jobs'").fetchone()
        assert low is not None and high is not None and int(str(high[0])) > int(str(low[0]))
        with Session(engine) as session, session.begin():
            assert safe_index(session) < int(str(low[0]))
            assert current_index(session, ["jobs"]) < int(str(low[0]))
        a.execute("INSERT INTO state_index (name, value) VALUES ('jobs', state_index_own())")
        a.commit()
    with Session(engine) as session, session.begin():
        assert current_index(session, ["jobs"]) == int(str(high[0]))
        assert safe_index(session) >= int(str(high[0]))


def test_compaction_keeps_the_newest_row_per_name(engine: Engine, pg: Conn) -> None:
    for _ in range(3):
        with Session(engine) as session, session.begin():
            next_index(session, ["jobs", "nodes"])
    with Session(engine) as session:
        before = all_indexes(session)
    with Session(engine) as session, session.begin():
        assert compact(session) >= 4
    with Session(engine) as session:
        assert all_indexes(session) == before
    per_name = pg.execute("SELECT count(*) FROM state_index GROUP BY name HAVING count(*) > 1").fetchall()
    assert per_name == []


def test_the_upgrade_keeps_indexes_increasing(empty_database_url: str) -> None:
    """A database whose counter ran far ahead of its transaction IDs (a restored dump, say):
    the first xid-based index still exceeds every index handed out before."""
    upgrade(empty_database_url, "0013_alloc_modify_index")
    far = 10**12
    url = libpq_url(empty_database_url)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE state_index SET value = %s WHERE name IN ('_global', 'jobs')", (far,))
    upgrade(empty_database_url)
    with psycopg.connect(url, autocommit=True) as conn:
        taken = conn.execute("SELECT state_index_own()").fetchone()
        assert taken is not None and int(str(taken[0])) > far
        command.downgrade(alembic_config(empty_database_url), "0013_alloc_modify_index")
        rows = conn.execute("SELECT name, value FROM state_index WHERE name IN ('_global', 'jobs')").fetchall()
    assert dict(rows) == {"_global": far, "jobs": far}


def test_taking_an_index_probes_the_log_by_name_however_long_it_grew(pg: Conn) -> None:
    """With the leader away the log is not compacted; taking an index must stay a probe of the
    primary key per name. At a few thousand rows the EXISTS form was planned as a hash semi join
    over a sequential scan of the whole log (this test fails on it)."""
    pg.execute(
        "INSERT INTO state_index (name, value) SELECT 'allocations', state_index_own() + i "
        "FROM generate_series(1, 3000) i"
    )
    query = psycopg_query("take_index")
    with pg.transaction(force_rollback=True):
        pg.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        pg.execute(f"PREPARE take AS {query.replace('%(tables)s', '$1').replace('%(notify)s', '$2')}")
        plan = "\n".join(
            str(row[0]) for row in pg.execute("EXPLAIN (ANALYZE) EXECUTE take(ARRAY['allocations', 'jobs'], false)")
        )
    assert "Seq Scan on state_index" not in plan and "pk_state_index" in plan, plan
