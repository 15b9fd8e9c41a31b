"""The migrated schema: matches the models, round-trips, and keeps the promises DESIGN makes
about foreign keys, comments, status checks, storage settings and inspection views."""

from __future__ import annotations

import psycopg
import pytest
from alembic import command
from sqlalchemy import CheckConstraint, MetaData, create_engine, text

from app.db.engines import libpq_url, sqlalchemy_url
from app.db.schema import (
    SchemaNotCurrentError,
    alembic_config,
    current_revision,
    ensure_current,
    head_revision,
    upgrade,
)
from app.models import Base
from app.values.constants import EVAL_TRIGGERS, sql_in
from tests.support import schema_catalog

pytestmark = pytest.mark.integration

HOT_TABLES = ("evaluations", "allocations", "plans", "node_heartbeats", "state_index")
VIEWS = ("v_eval_queue", "v_blocked_evals", "v_plan_queue", "v_node_usage", "v_job_summary")


def test_upgrade_from_empty_reaches_head_and_matches_models(empty_database_url: str) -> None:
    engine = create_engine(sqlalchemy_url(empty_database_url))
    with pytest.raises(SchemaNotCurrentError, match="corral db upgrade"):
        ensure_current(engine)
    upgrade(empty_database_url)
    assert current_revision(engine) == head_revision()
    ensure_current(engine)
    # Raises if autogenerate would emit anything: the models and the migrated schema agree.
    command.check(alembic_config(empty_database_url))
    engine.dispose()


def test_downgrade_to_base_and_back(empty_database_url: str, pg_admin_url: str) -> None:
    upgrade(empty_database_url)
    command.downgrade(alembic_config(empty_database_url), "base")
    with psycopg.connect(libpq_url(empty_database_url)) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'alembic_version'"
        ).fetchone()
    assert tables == (0,)
    upgrade(empty_database_url)
    command.check(alembic_config(empty_database_url))


def test_every_foreign_key_column_is_indexed(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    """A cascading delete without an index on the child column scans the whole child table."""
    unindexed = pg.execute(
        """
        SELECT c.conrelid::regclass::text, c.conname
        FROM pg_constraint c
        WHERE c.contype = 'f'
          AND NOT EXISTS (
            SELECT 1 FROM pg_index i
            WHERE i.indrelid = c.conrelid
              AND (i.indkey::int2[])[0:array_length(c.conkey, 1) - 1] @> c.conkey
              AND (i.indkey::int2[])[0:array_length(c.conkey, 1) - 1] <@ c.conkey
          )
        """
    ).fetchall()
    assert unindexed == []


def test_the_foreign_key_index_check_can_fail(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    pg.execute(
        "CREATE TABLE probe_child (id int PRIMARY KEY, job_ns text, job_id text, "
        "FOREIGN KEY (job_ns, job_id) REFERENCES jobs (namespace, id))"
    )
    with pytest.raises(AssertionError):
        test_every_foreign_key_column_is_indexed(pg)


def test_every_table_and_column_has_a_comment(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    missing_tables = pg.execute(
        """
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v') AND c.relname <> 'alembic_version'
          AND obj_description(c.oid, 'pg_class') IS NULL
        """
    ).fetchall()
    missing_columns = pg.execute(
        """
        SELECT c.relname, a.attname FROM pg_attribute a
        JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind = 'r' AND c.relname <> 'alembic_version'
          AND a.attnum > 0 AND NOT a.attisdropped AND col_description(c.oid, a.attnum) IS NULL
        """
    ).fetchall()
    assert missing_tables == []
    assert missing_columns == []


def test_every_status_column_has_a_check_constraint(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    unchecked = pg.execute(
        """
        SELECT c.table_name, c.column_name FROM information_schema.columns c
        WHERE c.table_schema = 'public' AND c.column_name LIKE '%status' AND c.data_type = 'text'
          AND c.table_name IN (SELECT tablename FROM pg_tables WHERE schemaname = 'public')
          AND NOT EXISTS (
            SELECT 1 FROM pg_constraint k
            WHERE k.conrelid = (quote_ident(c.table_name))::regclass AND k.contype = 'c'
              AND pg_get_constraintdef(k.oid) LIKE '%' || c.column_name || '%'
          )
        """
    ).fetchall()
    assert unchecked == []


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("evaluations", "status", "running"),
        ("allocations", "client_status", "exploded"),
        ("nodes", "status", "sleepy"),
        ("deployments", "status", "done"),
        ("plans", "status", "maybe"),
    ],
)
def test_status_checks_reject_unknown_values(
    pg: psycopg.Connection[tuple[object, ...]], table: str, column: str, value: str
) -> None:
    constraint = pg.execute(
        "SELECT pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = %s::regclass AND conname = %s",
        (table, f"ck_{table}_{column}"),
    ).fetchone()
    assert constraint is not None
    assert f"'{value}'" not in str(constraint[0])


def test_hot_tables_carry_autovacuum_and_fillfactor(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    for table in HOT_TABLES:
        row = pg.execute("SELECT reloptions FROM pg_class WHERE relname = %s", (table,)).fetchone()
        assert row is not None and isinstance(row[0], list), table
        options = dict(opt.split("=", 1) for opt in row[0])
        assert "fillfactor" in options, table
        assert float(options["autovacuum_vacuum_scale_factor"]) <= 0.05, table


def test_heartbeats_are_unlogged(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    assert pg.execute("SELECT relpersistence FROM pg_class WHERE relname = 'node_heartbeats'").fetchone() == ("u",)


def test_seed_rows_carry_nomad_defaults(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    config = pg.execute(
        "SELECT scheduler_algorithm, preemption_system, preemption_sysbatch, preemption_batch, "
        "preemption_service, memory_oversubscription, reject_job_registration, pause_eval_broker "
        "FROM scheduler_config"
    ).fetchall()
    assert config == [("binpack", True, False, False, False, False, False, False)]
    assert pg.execute("SELECT name FROM namespaces").fetchall() == [("default",)]
    assert sorted(pg.execute("SELECT name FROM node_pools").fetchall()) == [("all",), ("default",)]


def test_scheduler_config_is_a_single_row(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    with pytest.raises(psycopg.errors.CheckViolation):
        pg.execute("INSERT INTO scheduler_config (id, create_index, modify_index) VALUES (2, 1, 1)")


def test_inspection_views_exist_with_comments(pg: psycopg.Connection[tuple[object, ...]]) -> None:
    for view in VIEWS:
        row = pg.execute("SELECT obj_description(%s::regclass, 'pg_class')", (view,)).fetchone()
        assert row is not None and row[0], view
        pg.execute(f"SELECT * FROM {view}").fetchall()


def models_catalog(url: str, metadata: MetaData = Base.metadata) -> dict[str, schema_catalog.Table]:
    """The catalog of a fresh database built by `create_all` from `metadata`."""
    engine = create_engine(sqlalchemy_url(url))
    metadata.create_all(engine)
    engine.dispose()
    with psycopg.connect(libpq_url(url)) as conn:
        return schema_catalog.describe(conn, list(metadata.tables))


def migrated_catalog(pg: psycopg.Connection[tuple[object, ...]]) -> dict[str, schema_catalog.Table]:
    return schema_catalog.describe(pg, list(Base.metadata.tables))


def test_migrated_schema_matches_the_models_in_the_catalog(
    pg: psycopg.Connection[tuple[object, ...]], empty_database_url: str
) -> None:
    """CHECK constraints, defaults, indexes, comments, identity, storage: what `alembic check` skips."""
    expected = models_catalog(empty_database_url)
    assert len(expected) == len(Base.metadata.tables)
    assert schema_catalog.differences(expected, migrated_catalog(pg)) == []


def test_a_drifted_check_constraint_is_caught(
    pg: psycopg.Connection[tuple[object, ...]], empty_database_url: str
) -> None:
    """A trigger added to the model's CHECK without a migration, which `alembic check` lets pass."""
    drifted = MetaData(naming_convention=Base.metadata.naming_convention)
    for table in Base.metadata.tables.values():
        copy = table.to_metadata(drifted)
        copy._prefixes = list(table._prefixes)  # to_metadata drops them (UNLOGGED)
    (check,) = [
        c
        for c in drifted.tables["evaluations"].constraints
        if isinstance(c, CheckConstraint) and str(c.name).endswith("triggered_by")
    ]
    check.sqltext = text(f"triggered_by IN {sql_in((*EVAL_TRIGGERS, 'drifted-trigger'))}")
    found = schema_catalog.differences(models_catalog(empty_database_url, drifted), migrated_catalog(pg))
    assert len(found) == 1
    assert found[0].startswith("evaluations constraints ck_evaluations_triggered_by:")
    assert "drifted-trigger" in found[0]
