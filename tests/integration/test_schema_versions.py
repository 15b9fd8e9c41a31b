"""Which schemas a role runs on (head, or one revision behind during a rolling upgrade), and a
migration that gives way to lock holders instead of queueing the hot path behind it."""

from __future__ import annotations

import threading

import psycopg
import pytest
from alembic import command
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine

from app.db.bundled import MIGRATIONS_DIR
from app.db.engines import libpq_url, sqlalchemy_url
from app.db.schema import (
    SchemaNotCurrentError,
    alembic_config,
    current_revision,
    ensure_current,
    head_revision,
    previous_revision,
    upgrade,
)

pytestmark = pytest.mark.integration


def _two_behind() -> str:
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    previous = previous_revision()
    assert previous is not None
    down = script.get_revision(previous).down_revision
    assert isinstance(down, str)
    return down


def test_head_and_one_behind_are_accepted_two_behind_is_refused(empty_database_url: str) -> None:
    engine = create_engine(sqlalchemy_url(empty_database_url))
    try:
        upgrade(empty_database_url, _two_behind())
        with pytest.raises(SchemaNotCurrentError, match="rolling upgrade"):
            ensure_current(engine)
        upgrade(empty_database_url, str(previous_revision()))
        assert ensure_current(engine) == previous_revision()
        upgrade(empty_database_url)
        assert ensure_current(engine) == head_revision()
    finally:
        engine.dispose()


def test_a_schema_ahead_of_the_code_is_refused(empty_database_url: str) -> None:
    upgrade(empty_database_url)
    with psycopg.connect(libpq_url(empty_database_url), autocommit=True) as conn:
        conn.execute("UPDATE alembic_version SET version_num = '9999_from_a_newer_release'")
    engine = create_engine(sqlalchemy_url(empty_database_url))
    try:
        with pytest.raises(SchemaNotCurrentError, match="9999_from_a_newer_release"):
            ensure_current(engine)
    finally:
        engine.dispose()


def test_a_migration_waits_out_a_lock_holder_and_completes(empty_database_url: str) -> None:
    """Every revision needs a lock a long transaction holds (alembic_version's at least): each try gives way after the
    lock_timeout, rolls back whole, and the upgrade completes once the holder is gone."""
    upgrade(empty_database_url, str(previous_revision()))
    holder = psycopg.connect(libpq_url(empty_database_url))
    holder.execute("LOCK TABLE alembic_version, evaluations, allocations, jobs, nodes IN ACCESS EXCLUSIVE MODE")
    release = threading.Timer(2.0, holder.rollback)
    release.start()
    try:
        upgrade(empty_database_url, lock_timeout="200ms")
    finally:
        release.join()
        holder.close()
    engine = create_engine(sqlalchemy_url(empty_database_url))
    try:
        assert current_revision(engine) == head_revision()
    finally:
        engine.dispose()
    command.check(alembic_config(empty_database_url))


def test_a_lock_held_past_every_try_fails_the_upgrade_and_leaves_the_schema_where_it_was(
    empty_database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import app.db.schema as schema

    monkeypatch.setattr(schema, "UPGRADE_ATTEMPTS", 2)
    upgrade(empty_database_url, str(previous_revision()))
    with psycopg.connect(libpq_url(empty_database_url)) as holder:
        holder.execute("LOCK TABLE alembic_version, evaluations, allocations, jobs, nodes IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(Exception, match="lock timeout"):
            upgrade(empty_database_url, lock_timeout="100ms")
        holder.rollback()
    engine = create_engine(sqlalchemy_url(empty_database_url))
    try:
        assert current_revision(engine) == previous_revision()
    finally:
        engine.dispose()
