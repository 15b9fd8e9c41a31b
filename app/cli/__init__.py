"""The corral command: every role is a subcommand."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import click

from app.config import ConfigError, Settings, get_settings
from app.logging import configure, resolve_format


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """corral: a Nomad-style cluster scheduler whose whole state lives in PostgreSQL.

    Configuration comes from CORRAL_* environment variables (see docs/configuration.md). Without
    CORRAL_DATABASE_URL every command uses the embedded PostgreSQL in CORRAL_DATA_DIR
    (default .corral/ in the working directory).
    """
    try:
        get_settings()
    except ConfigError as err:
        raise click.ClickException(f"invalid configuration: {err}") from None


@main.command()
@click.option("-dev", "--dev", "dev", is_flag=True, help="Development mode: embedded PostgreSQL, all roles.")
def agent(dev: bool) -> None:
    """Run corral. With -dev: start the embedded PostgreSQL (unless CORRAL_DATABASE_URL is
    set), migrate it, and run every role as a child process with one merged log. Ctrl-C
    stops everything, the embedded database included."""
    if not dev:
        raise click.UsageError("only `corral agent -dev` exists; run roles separately in production")
    from workers.agent import StartRefusedError, run_dev_agent

    settings = get_settings()
    # Decided once, on the agent's terminal: the roles write to a pipe and are told the result.
    settings = settings.model_copy(update={"log_format": resolve_format(settings.log_format)})
    configure("agent", settings.log_level, settings.log_format)
    try:
        code = run_dev_agent(settings)
    except StartRefusedError as err:
        raise click.ClickException(str(err)) from err
    sys.exit(code)


@main.command()
def server() -> None:
    """Serve the HTTP API (gunicorn, gevent workers) on CORRAL_BIND (default 127.0.0.1:4646).
    Exits with an error if the database schema is not at the current revision."""
    from workers.server import run_server

    settings = get_settings()
    configure("server", settings.log_level, settings.log_format)
    with _database(settings, "api") as url:
        run_server(settings, url)


@main.command()
@click.option(
    "--schedulers",
    default="service,batch,system,sysbatch,_core",
    show_default=True,
    help="Comma-separated evaluation types this worker serves.",
)
def worker(schedulers: str) -> None:
    """Run a scheduling worker: claim evaluations, schedule them, submit plans. Run as many as
    you like, on any host. SIGTERM finishes the current evaluation (or gives it back, if its plan
    is still waiting for the applier), then exits."""
    from workers.runtime import stop_on_signals
    from workers.worker import ALL_SCHEDULERS, run_worker

    chosen = tuple(s.strip() for s in schedulers.split(",") if s.strip())
    unknown = sorted(set(chosen) - set(ALL_SCHEDULERS))
    if unknown or not chosen:
        raise click.BadParameter(
            f"unknown scheduler(s) {unknown}; choose from {', '.join(ALL_SCHEDULERS)}", param_hint="--schedulers"
        )
    settings = get_settings()
    configure("worker", settings.log_level, settings.log_format)
    stop = stop_on_signals()
    with _database(settings, "worker", stop) as url:
        run_worker(settings, url, chosen, stop)


@main.command()
def applier() -> None:
    """Run the plan applier: the single writer of placements. Start two or more; one holds the
    role (advisory lock + term) and the others stand by and take over if it dies or freezes."""
    from workers.applier import run_applier
    from workers.runtime import stop_on_signals

    settings = get_settings()
    configure("applier", settings.log_level, settings.log_format)
    stop = stop_on_signals()
    with _database(settings, "applier", stop) as url:
        run_applier(settings, url, stop)


@main.command()
def leader() -> None:
    """Run the leader's periodic duties (failed-evaluation follow-ups, the blocked-evaluation
    sweep, node heartbeat expiry, disconnect windows and drains, periodic job launches every
    second, and one garbage-collection core evaluation per collector on its
    CORRAL_*_GC_INTERVAL_S). Start two or more; one holds the role and the others stand by."""
    from workers.leader import run_leader
    from workers.runtime import stop_on_signals

    settings = get_settings()
    configure("leader", settings.log_level, settings.log_format)
    stop = stop_on_signals()
    with _database(settings, "leader", stop) as url:
        run_leader(settings, url, stop)


@contextmanager
def _database(settings: Settings, role: str, stop: threading.Event | None = None) -> Iterator[str]:
    """The database URL for a role once the database answers (the role waits for it, with one
    log line, rather than exit), refusing a schema that is not at head with a clear message."""
    from app.db.schema import SchemaNotCurrentError
    from workers.runtime import StoppedWaiting, database_for

    try:
        with database_for(settings, role, stop) as url:
            yield url
    except SchemaNotCurrentError as err:
        raise click.ClickException(str(err)) from err
    except StoppedWaiting:
        sys.exit(0)


from app.cli.alloc import alloc  # noqa: E402
from app.cli.client import client, fleet  # noqa: E402
from app.cli.db import db  # noqa: E402
from app.cli.deployment import deployment  # noqa: E402
from app.cli.job import job  # noqa: E402
from app.cli.node import node  # noqa: E402
from app.cli.operator import operator  # noqa: E402
from app.cli.system import system  # noqa: E402

main.add_command(db)
main.add_command(job)
main.add_command(operator)
main.add_command(system)
main.add_command(client)
main.add_command(fleet)
main.add_command(node)
main.add_command(alloc)
main.add_command(deployment)

if __name__ == "__main__":
    main()
