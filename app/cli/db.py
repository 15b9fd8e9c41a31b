"""`corral db`: schema migrations, run in-process against the configured database."""

from __future__ import annotations

import click

from app.config import get_settings
from app.logging import configure


@click.group()
def db() -> None:
    """Manage the database schema (Alembic migrations)."""


@db.command()
@click.option("--revision", default="head", show_default=True, help="Target revision.")
def upgrade(revision: str) -> None:
    """Migrate the database to the latest schema (or --revision)."""
    from app.store.database import open_database
    from app.store.schema import upgrade as run_upgrade

    settings = get_settings()
    configure("migrate", settings.log_level, settings.log_format)
    database = open_database(settings)
    try:
        run_upgrade(database.url, revision)
        click.echo(f"database schema is at {revision}")
    finally:
        database.close()


@db.command()
def current() -> None:
    """Print the database's schema revision and the revision this code needs."""
    from app.db import make_engine
    from app.store.database import open_database
    from app.store.schema import current_revision, head_revision

    settings = get_settings()
    configure("cli", settings.log_level, settings.log_format)
    database = open_database(settings)
    try:
        engine = make_engine(database.url, "cli", pool_size=1)
        click.echo(f"current: {current_revision(engine) or '(empty)'}")
        click.echo(f"head:    {head_revision()}")
        engine.dispose()
    finally:
        database.close()
