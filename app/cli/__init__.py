"""The corral command: every role is a subcommand."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from app.cli.support.settings import get_settings, reload_settings, serve_metrics

if TYPE_CHECKING:
    from app.agentconfig.flags import AgentFlags
    from app.settings.config import Settings

# Start-up time matters (every `corral job status` pays it): this module and the command
# modules import only click at top level. Settings (pydantic-settings), logging, the job
# parser (hcl2/lark) and the database stack are imported inside the commands that use them; the
# API client is the standard library's http.client (app/cli/support/http.py).


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
def main() -> None:
    """corral: a Nomad-style cluster scheduler whose whole state lives in PostgreSQL.

    Configuration comes from CORRAL_* environment variables (see docs/configuration.md). Without
    CORRAL_DATABASE_URL every command uses the embedded PostgreSQL in CORRAL_DATA_DIR
    (default .corral/ in the working directory). Commands that talk to a server read only
    CORRAL_ADDR (else NOMAD_ADDR), CORRAL_TOKEN (else NOMAD_TOKEN) and CORRAL_NAMESPACE (else
    NOMAD_NAMESPACE; every such command also takes -namespace and -region).
    """


@main.command()
@click.option("-dev", "--dev", "dev", is_flag=True, help="Development mode: embedded PostgreSQL, all roles.")
@click.option(
    "-config",
    "--config",
    "configs",
    multiple=True,
    type=click.Path(exists=True, path_type=Path),
    help="Nomad's agent configuration: an HCL or JSON file, or a directory (every *.hcl and *.json in it, "
    "in lexical order); repeatable, later files win per key. See docs/configuration.md.",
)
@click.option(
    "-acl-enabled",
    "--acl-enabled",
    "acl_enabled",
    is_flag=True,
    help="Enforce ACLs (as CORRAL_ACL_ENABLED=true); the agent's own client gets a node:write token it mints.",
)
@click.option("-bind", "bind", default="", help="The API's address (bind_addr); the port stays ports.http.")
@click.option("-data-dir", "data_dir", default="", help="The agent's data directory (data_dir).")
@click.option("-log-level", "log_level", default="", help="DEBUG, INFO, WARN or ERROR (log_level).")
@click.option("-log-json", "log_json", is_flag=True, help="Log as JSON (log_json).")
@click.option("-dc", "dc", default="", help="The client's datacenter (datacenter). Not with -dev.")
@click.option("-region", "region", default="", help='The region (region; corral has one, "global"). Not with -dev.')
@click.option("-node", "node", default="", help="The client's node name (name). Not with -dev.")
@click.option("-server", "server", is_flag=True, help="Run the server roles (server.enabled). Not with -dev.")
@click.option("-client", "client", is_flag=True, help="Run the client (client.enabled). Not with -dev.")
@click.option("-servers", "servers", default="", help="Comma-separated API addresses (client.servers). Not with -dev.")
@click.option(
    "-node-class", "node_class", default="", help="The client's node class (client.node_class). Not with -dev."
)
@click.option("-node-pool", "node_pool", default="", help="The client's node pool (client.node_pool). Not with -dev.")
@click.option("-meta", "meta", multiple=True, help="key=value, repeatable (client.meta). Not with -dev.")
@click.option(
    "-state-dir", "state_dir", default="", help="The client's state directory (client.state_dir). Not with -dev."
)
@click.option(
    "-alloc-dir",
    "alloc_dir",
    default="",
    help="Where the client makes allocation directories, an absolute path (client.alloc_dir; default: "
    "the state directory's allocs/). Not with -dev.",
)
@click.option(
    "-network-interface",
    "network_interface",
    default="",
    help="The interface whose address the node advertises and host ports bind to (client.network_interface; "
    "default: the default route's). Not with -dev.",
)
@click.option(
    "-plugin-dir",
    "plugin_dir",
    default="",
    help="Accepted for Nomad's scripts and ignored with a warning: corral's task drivers are built in (plugin_dir).",
)
def agent(  # one parameter per Nomad flag
    dev: bool,
    configs: tuple[Path, ...],
    acl_enabled: bool,
    bind: str,
    data_dir: str,
    log_level: str,
    log_json: bool,
    dc: str,
    region: str,
    node: str,
    server: bool,
    client: bool,
    servers: str,
    node_class: str,
    node_pool: str,
    meta: tuple[str, ...],
    state_dir: str,
    alloc_dir: str,
    network_interface: str,
    plugin_dir: str,
) -> None:
    """Run corral. With -dev: start the embedded PostgreSQL (unless CORRAL_DATABASE_URL is
    set), migrate it, and run every role as a child process with one merged log. Ctrl-C (or
    SIGTERM) stops everything, the embedded database included; a second one during that stop
    kills the roles at once. The client gets no database URL and
    none of the operator's tokens; with ACLs on it registers with a short-lived token that
    only allows node:write, minted by the agent.

    With -config (or Nomad's flags alone, e.g. -server -client -data-dir=DIR): run what Nomad's
    agent configuration enables; the flags win over the files. `server { enabled = true }` runs
    the API, two workers, the applier and the leader on the database of the `database` block
    (else the embedded one in data_dir); `client { enabled = true }` runs the node agent against
    client.servers (else the local API). Unknown keys are refused; Nomad keys with no meaning
    here are named in a warning."""
    from app.agentconfig.flags import AgentFlags
    from workers.agent import StartRefusedError

    flags = AgentFlags(
        bind=bind,
        data_dir=data_dir,
        dc=dc,
        region=region,
        node=node,
        log_level=log_level,
        log_json=log_json,
        server=server,
        client=client,
        servers=servers,
        node_class=node_class,
        node_pool=node_pool,
        meta=meta,
        state_dir=state_dir,
        alloc_dir=alloc_dir,
        network_interface=network_interface,
        plugin_dir=plugin_dir,
    )
    if dev and configs:
        raise click.UsageError("give -dev (development mode) or -config PATH (Nomad's agent configuration), not both")
    if not dev and not configs and not flags.given():
        raise click.UsageError("give -dev (development mode) or -config PATH (Nomad's agent configuration)")
    try:
        if not dev:
            from app.cli.local.agent_config import run_config_agent

            sys.exit(run_config_agent(list(configs), acl_enabled, flags))
        sys.exit(_dev_agent(acl_enabled, flags))
    except StartRefusedError as err:
        raise click.ClickException(str(err)) from err


def _dev_agent(acl_enabled: bool, flags: AgentFlags) -> int:
    from app.settings.logging import configure, resolve_format
    from workers.agent import run_dev_agent

    if acl_enabled:
        os.environ["CORRAL_ACL_ENABLED"] = "true"  # the roles read their settings from the environment
    from app.cli.local.agent_config import dev_flag_env

    os.environ.update(dev_flag_env(flags, get_settings().bind))
    settings = reload_settings()
    # Decided once, on the agent's terminal: the roles write to a pipe and are told the result.
    settings = settings.model_copy(update={"log_format": resolve_format(settings.log_format)})
    configure("agent", settings.log_level, settings.log_format)
    return run_dev_agent(settings)


@main.group(invoke_without_command=True)
@click.pass_context
def server(ctx: click.Context) -> None:
    """Without a subcommand: serve the HTTP API (gunicorn, gevent workers) on CORRAL_BIND
    (default 127.0.0.1:4646); exits with an error if the database schema is not at the current
    revision or the TLS settings are incomplete. With CORRAL_READ_DATABASE_URL (hot standbys),
    blocking queries and ?stale reads are answered from a standby that has replayed past the
    client's index; writes always go to CORRAL_DATABASE_URL. `corral server members` lists the
    servers of the cluster at CORRAL_ADDR."""
    if ctx.invoked_subcommand is not None:
        return
    from app.acl.link_secret import LinkSecretError, for_server
    from app.keyring import root_key
    from app.settings.config import tls_problem
    from app.settings.logging import configure
    from workers.server import run_server

    settings = get_settings()
    problem = tls_problem(settings)
    if problem is not None:
        raise click.ClickException(f"invalid configuration: {problem}")
    configure("server", settings.log_level, settings.log_format)
    try:
        settings = root_key.for_server(for_server(settings))
    except (LinkSecretError, root_key.RootKeyError, OSError) as err:
        raise click.ClickException(f"invalid configuration: {err}") from err
    with _database(settings, "api") as url:
        run_server(settings, url)


@main.command()
@click.option(
    "--schedulers",
    default="service,batch,system,sysbatch,_core",
    show_default=True,
    help="Comma-separated evaluation types this worker serves.",
)
@click.option(
    "--num-schedulers",
    "-num-schedulers",
    type=click.IntRange(1, 64),
    default=None,
    help="Scheduling loops in this process, each claiming its own evaluation (Nomad's num_schedulers). "
    "Default: CORRAL_NUM_SCHEDULERS.",
)
@click.option(
    "--eval-batch",
    type=click.IntRange(1, 64),
    default=None,
    help="Most ready evaluations (of distinct jobs) one loop claims and schedules together: one snapshot "
    "read and one plan submit for all of them. 1: one at a time. Default: CORRAL_EVAL_BATCH.",
)
def worker(schedulers: str, num_schedulers: int | None, eval_batch: int | None) -> None:
    """Run a scheduling worker: claim evaluations, schedule them, submit plans. Run as many as
    you like, on any host. SIGTERM finishes the current evaluations (or gives them back, if their
    plans are still waiting for the applier), then exits."""
    from app.settings.logging import configure
    from workers.runtime import stop_on_signals
    from workers.timings_publisher import publishing
    from workers.worker import ALL_SCHEDULERS, run_worker

    chosen = tuple(s.strip() for s in schedulers.split(",") if s.strip())
    unknown = sorted(set(chosen) - set(ALL_SCHEDULERS))
    if unknown or not chosen:
        raise click.BadParameter(
            f"unknown scheduler(s) {unknown}; choose from {', '.join(ALL_SCHEDULERS)}", param_hint="--schedulers"
        )
    settings = get_settings()
    if num_schedulers is not None:
        settings = settings.model_copy(update={"num_schedulers": num_schedulers})
    if eval_batch is not None:
        settings = settings.model_copy(update={"eval_batch": eval_batch})
    configure("worker", settings.log_level, settings.log_format)
    serve_metrics(settings, "worker")
    stop = stop_on_signals()
    with _database(settings, "worker", stop) as url, publishing(url, "worker", stop):
        run_worker(settings, url, chosen, stop)


@main.command()
def applier() -> None:
    """Run the plan applier: the single writer of placements. Start two or more; one holds the
    role (advisory lock + term) and the others stand by and take over if it dies or freezes."""
    from app.settings.logging import configure
    from workers.applier import run_applier
    from workers.runtime import stop_on_signals
    from workers.timings_publisher import publishing

    settings = get_settings()
    configure("applier", settings.log_level, settings.log_format)
    serve_metrics(settings, "applier")
    stop = stop_on_signals()
    with _database(settings, "applier", stop) as url, publishing(url, "applier", stop):
        run_applier(settings, url, stop)


@main.command()
def leader() -> None:
    """Run the leader's periodic duties (failed-evaluation follow-ups, the blocked-evaluation
    sweep, node heartbeat expiry, disconnect windows and drains, periodic job launches every
    second, and one garbage-collection core evaluation per collector on its
    CORRAL_*_GC_INTERVAL_S). Start two or more; one holds the role and the others stand by."""
    from app.settings.logging import configure
    from workers.leader import run_leader
    from workers.runtime import stop_on_signals

    settings = get_settings()
    configure("leader", settings.log_level, settings.log_format)
    serve_metrics(settings, "leader")
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


from app.cli.acl import acl  # noqa: E402
from app.cli.acls.login import login  # noqa: E402
from app.cli.agent_monitor import monitor as agent_monitor  # noqa: E402
from app.cli.allocs.alloc import alloc  # noqa: E402
from app.cli.allocs.alloc_checks import checks as _checks  # noqa: E402, F401  (registers alloc checks)
from app.cli.allocs.alloc_exec import exec_ as _exec  # noqa: E402, F401  (registers alloc exec)
from app.cli.allocs.alloc_ops import fs as _fs  # noqa: E402, F401  (registers alloc fs|restart|signal)
from app.cli.client import client, fleet  # noqa: E402
from app.cli.config_validate import config  # noqa: E402
from app.cli.db import db  # noqa: E402
from app.cli.deployment import deployment  # noqa: E402
from app.cli.evals.eval import eval_  # noqa: E402
from app.cli.evals.eval_delete import add_command as add_eval_delete  # noqa: E402
from app.cli.jobs.job import job  # noqa: E402
from app.cli.keyring import root as keyring_root  # noqa: E402
from app.cli.local.fmt import fmt  # noqa: E402
from app.cli.local.tls import tls  # noqa: E402
from app.cli.namespace import namespace  # noqa: E402
from app.cli.nodes.node import node  # noqa: E402
from app.cli.nodes.node_meta import meta as node_meta  # noqa: E402
from app.cli.nodes.node_pool import pool as node_pool  # noqa: E402
from app.cli.nodes.node_pool_init import init as node_pool_init  # noqa: E402
from app.cli.nodes.volume import plugin, volume  # noqa: E402
from app.cli.operator import operator  # noqa: E402
from app.cli.operator_api import api as operator_api  # noqa: E402
from app.cli.operator_debug import debug as operator_debug  # noqa: E402
from app.cli.scaling import scaling  # noqa: E402
from app.cli.service import service  # noqa: E402
from app.cli.status import add_server_views, agent_info, status, version  # noqa: E402
from app.cli.support.api_flags import install as install_api_flags  # noqa: E402
from app.cli.system import system  # noqa: E402
from app.cli.ui import ui  # noqa: E402
from app.cli.vars.var import var  # noqa: E402

main.add_command(db)
main.add_command(job)
main.add_command(operator)
main.add_command(system)
main.add_command(client)
main.add_command(fleet)
main.add_command(node)
node.add_command(node_pool)  # `corral node pool ...`
node_pool.add_command(node_pool_init)
node.add_command(node_meta)  # `corral node meta ...`
main.add_command(alloc)
main.add_command(deployment)
main.add_command(service)
main.add_command(acl)
main.add_command(login)
main.add_command(namespace)
main.add_command(eval_)
add_eval_delete(eval_)
main.add_command(status)
main.add_command(version)
main.add_command(config)
main.add_command(fmt)
main.add_command(tls)
main.add_command(ui)
main.add_command(agent_monitor)  # `corral monitor`
operator.add_command(operator_api)
operator.add_command(operator_debug)
main.add_command(operator_debug, "debug")  # Nomad keeps `debug` as the top-level alias of `operator debug`
main.add_command(agent_info)
main.add_command(var)
main.add_command(scaling)
operator.add_command(keyring_root)
main.add_command(volume)
main.add_command(plugin)
add_server_views(server)
# Nomad's top-level shortcuts: the same commands under a second name.
for _name in ("run", "stop", "plan", "inspect", "init", "validate", "start", "action"):
    main.add_command(job.commands[_name], _name)
for _name in ("logs", "exec", "fs"):
    main.add_command(alloc.commands[_name], _name)
install_api_flags(main)

if __name__ == "__main__":
    main()
