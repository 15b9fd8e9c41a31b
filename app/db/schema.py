"""Alembic wiring: run migrations and check that a database is at head."""

from __future__ import annotations

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine

# SQL_DIR stays importable from here: the migrations read their versioned view and function files
# through it.
from app.db.bundled import MIGRATIONS_DIR
from app.db.bundled import SQL_DIR as SQL_DIR


class SchemaNotCurrentError(RuntimeError):
    """The database is not at the revision this code needs."""


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["database_url"] = url
    return cfg


def upgrade(url: str, revision: str = "head") -> None:
    command.upgrade(alembic_config(url), revision)


def head_revision() -> str:
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    head = script.get_current_head()
    assert head is not None, "no migrations found"
    return head


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def ensure_current(engine: Engine) -> None:
    """Refuse to run against a database whose schema is behind (or ahead of) this code."""
    current, head = current_revision(engine), head_revision()
    if current != head:
        where = "empty" if current is None else f"at revision {current}"
        raise SchemaNotCurrentError(
            f"the database schema is {where} but corral needs revision {head}: "
            "run `corral db upgrade` (with the same CORRAL_DATABASE_URL / CORRAL_DATA_DIR)"
        )
