"""The corral command: every role is a subcommand."""

from __future__ import annotations

import sys

import click

from app.config import get_settings
from app.logging import configure


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """corral: a Nomad-style cluster scheduler whose whole state lives in PostgreSQL.

    Configuration comes from CORRAL_* environment variables (see README). Without
    CORRAL_DATABASE_URL every command uses the embedded PostgreSQL in CORRAL_DATA_DIR
    (default .corral/ in the working directory).
    """


@main.command()
@click.option("-dev", "--dev", "dev", is_flag=True, help="Development mode: embedded PostgreSQL, all roles.")
def agent(dev: bool) -> None:
    """Run corral. With -dev: start the embedded PostgreSQL (unless CORRAL_DATABASE_URL is
    set), migrate it, and run every role as a child process with one merged log. Ctrl-C
    stops everything, the embedded database included."""
    if not dev:
        raise click.UsageError("only `corral agent -dev` exists; run roles separately in production")
    from workers.agent import run_dev_agent

    settings = get_settings()
    configure("agent", settings.log_level, settings.log_format)
    sys.exit(run_dev_agent(settings))


@main.command()
def server() -> None:
    """Serve the HTTP API (gunicorn, gthread workers) on CORRAL_BIND (default 127.0.0.1:4646).
    Exits with an error if the database schema is not at the current revision."""
    from app.db import make_engine
    from app.store.database import open_database
    from app.store.schema import SchemaNotCurrentError, ensure_current
    from workers.server import run_server

    settings = get_settings()
    configure("server", settings.log_level, settings.log_format)
    database = open_database(settings)
    try:
        engine = make_engine(database.url, "api", pool_size=1)
        try:
            ensure_current(engine)
        except SchemaNotCurrentError as err:
            raise click.ClickException(str(err)) from err
        finally:
            engine.dispose()
        run_server(settings, database.url)
    finally:
        database.close()


from app.cli.db import db  # noqa: E402

main.add_command(db)

if __name__ == "__main__":
    main()
