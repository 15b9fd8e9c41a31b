"""Alembic wiring: run migrations and check that a database is one this code can run on.

Rolling upgrades (expand/contract): the roles of a new release start on a database still at the
previous revision, then `corral db upgrade` migrates it under them. So a role accepts the head
revision and the one before it, and every revision is written so that the code of its own
release runs on the schema without it (see CONTRIBUTING.md). Migrations take locks for at most
`lock_timeout` and are retried, so one never queues the hot path behind it for long."""

from __future__ import annotations

import time

import structlog
from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from sqlalchemy.exc import OperationalError

# SQL_DIR stays importable from here: the migrations read their versioned view and function files
# through it.
from app.db.bundled import MIGRATIONS_DIR
from app.db.bundled import SQL_DIR as SQL_DIR

log = structlog.get_logger(__name__)
LOCK_NOT_AVAILABLE = "55P03"  # SQLSTATE of a lock_timeout expiring
UPGRADE_ATTEMPTS = 6


class SchemaNotCurrentError(RuntimeError):
    """The database is not at a revision this code can run on."""


def alembic_config(url: str) -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS_DIR))
    cfg.attributes["database_url"] = url
    return cfg


def upgrade(url: str, revision: str = "head", lock_timeout: str = "5s") -> None:
    """Migrate to `revision`. Each statement waits at most `lock_timeout` for its locks (a
    migration that would queue every claim and placement behind it gives way instead); a
    revision that gave way is rolled back whole and tried again after a pause."""
    config = alembic_config(url)
    config.attributes["lock_timeout"] = lock_timeout
    for attempt in range(1, UPGRADE_ATTEMPTS + 1):
        try:
            command.upgrade(config, revision)
            return
        except OperationalError as error:
            if getattr(error.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE or attempt == UPGRADE_ATTEMPTS:
                raise
            log.warning("migration gave way to a lock holder; trying again", attempt=attempt)
            time.sleep(min(8.0, 0.5 * 2**attempt))


def head_revision() -> str:
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    head = script.get_current_head()
    assert head is not None, "no migrations found"
    return head


def previous_revision() -> str | None:
    """The revision before head: the schema a new release's roles still run on."""
    script = ScriptDirectory(str(MIGRATIONS_DIR))
    down = script.get_revision(head_revision()).down_revision
    if not isinstance(down, str):  # a merge revision (or none): no single previous schema to promise
        return None
    return down


def current_revision(engine: Engine) -> str | None:
    with engine.connect() as conn:
        return MigrationContext.configure(conn).get_current_revision()


def ensure_current(engine: Engine) -> str:
    """Refuse to run against a database this code cannot use: empty, older than the revision
    before head, or ahead of head (a newer release migrated it). Returns the revision found; one
    revision behind is accepted (a rolling upgrade in progress) with a warning."""
    current, head = current_revision(engine), head_revision()
    if current == head:
        return head
    if current is not None and current == previous_revision():
        log.warning(
            "database schema is one revision behind this code; run `corral db upgrade`", current=current, head=head
        )
        return current
    where = "empty" if current is None else f"at revision {current}"
    raise SchemaNotCurrentError(
        f"the database schema is {where} but corral needs revision {head} (or {previous_revision()} while "
        "a rolling upgrade is under way): run `corral db upgrade` (with the same CORRAL_DATABASE_URL / "
        "CORRAL_DATA_DIR)"
    )
