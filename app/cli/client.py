"""`corral client`: run the node agent on this machine."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from app.cli.support.settings import get_settings, serve_metrics

if TYPE_CHECKING:
    from collections.abc import Callable

    from prometheus_client.registry import Collector

    from app.settings.config import Settings
    from app.wire.json import JsonObject
    from client.config import ClientConfig


def default_address() -> str:
    return os.environ.get("CORRAL_ADDR") or os.environ.get("NOMAD_ADDR") or "http://127.0.0.1:4646"


class Interval(click.ParamType[float]):
    """Nomad's duration ("1m", "90s") or a number of seconds, as seconds."""

    name = "duration"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        from client.config import ConfigError, interval_seconds

        if isinstance(value, float):
            return value
        try:
            return interval_seconds(value)
        except ConfigError as err:
            self.fail(str(err), param, ctx)


def _ports(_ctx: click.Context, _param: click.Parameter, value: str | None) -> str | None:
    """Nomad's reserved port syntax, checked here so a typo is a usage error, not a rejected registration."""
    for part in filter(None, (p.strip() for p in (value or "").split(","))):
        low, dash, high = part.partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or not int(low) <= int(high or low) <= 65535:
            raise click.BadParameter(f"must be ports or ascending ranges like '22,8000-8100', got {part!r}")
    return value


def _meta(values: tuple[str, ...]) -> dict[str, str]:
    meta = {}
    for item in values:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"must be key=value, got {item!r}", param_hint="--meta")
        meta[key] = value
    return meta


@click.command()
@click.option(
    "-config",
    "--config",
    "config_file",
    type=click.Path(exists=True, path_type=Path),
    help=(
        "JSON file with any of the settings below (snake_case keys; GC settings by Nomad's names,"
        ' gc_interval, gc_max_allocs, ..., at the top level or under "gc"), or Nomad\'s agent'
        " configuration (an .hcl file or a directory: its client block and plugin blocks, as"
        " `corral agent -config` reads them). Flags win."
    ),
)
@click.option(
    "--server",
    "server",
    default=None,
    help="Server address [default: CORRAL_ADDR, NOMAD_ADDR or http://127.0.0.1:4646].",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the client keeps its identity and allocation directories [default: .corral-client].",
)
@click.option(
    "-alloc-dir",
    "--alloc-dir",
    default=None,
    help="Where allocation directories are made, an absolute path (Nomad's alloc_dir) [default: <data-dir>/allocs].",
)
@click.option(
    "-network-interface",
    "--network-interface",
    default=None,
    help="The interface whose address the node advertises and host ports bind to (Nomad's network_interface) "
    "[default: the default route's].",
)
@click.option("--name", default=None, help="Node name [default: the hostname].")
@click.option("-dc", "--datacenter", default=None, help="Datacenter [default: dc1].")
@click.option("--node-class", default=None, help="Node class.")
@click.option("--node-pool", default=None, help="Node pool [default: default].")
@click.option("--meta", multiple=True, help="Node metadata key=value; repeatable.")
@click.option(
    "--driver",
    "drivers",
    multiple=True,
    type=click.Choice(["raw_exec", "exec", "mock", "docker"]),
    help="Task driver to enable (mock, raw_exec, exec, docker); repeatable [default: mock; the others must be "
    "enabled here or in the config].",
)
@click.option(
    "--docker-endpoint",
    default=None,
    help="The docker driver's daemon (Nomad's plugin option `endpoint`) [default: DOCKER_HOST, "
    "else unix:///var/run/docker.sock].",
)
@click.option("--reserved-cpu", type=click.IntRange(0), default=None, help="CPU MHz held back from scheduling.")
@click.option("--reserved-memory", type=click.IntRange(0), default=None, help="Memory MB held back.")
@click.option("--reserved-disk", type=click.IntRange(0), default=None, help="Disk MB held back.")
@click.option("--reserved-ports", default=None, callback=_ports, help="Host ports held back, e.g. '22,8000-8100'.")
@click.option(
    "--cpu-total-compute",
    type=click.IntRange(1),
    default=None,
    help="Advertise this many MHz instead of the fingerprinted total.",
)
@click.option("--memory-total-mb", type=click.IntRange(1), default=None, help="Advertise this much memory.")
@click.option(
    "--host-volume",
    "host_volumes",
    multiple=True,
    help="A host volume jobs may mount, name=/path or name=/path:ro (read-only); repeatable. "
    'The config file\'s "host_volume" object declares them too.',
)
@click.option(
    "--http-bind",
    default=None,
    help="host:port of the client's endpoint the servers proxy client routes to [default: 127.0.0.1:0, a free port].",
)
@click.option(
    "--gc-interval",
    type=Interval(),
    default=None,
    help='Time between GC runs, a duration ("1m", "30s") or seconds [default: 1m].',
)
@click.option(
    "--gc-disk-usage-threshold",
    type=click.FloatRange(0, 100),
    default=None,
    help="Disk usage percent GC keeps below [default: 80].",
)
@click.option(
    "--gc-inode-usage-threshold",
    type=click.FloatRange(0, 100),
    default=None,
    help="Inode usage percent GC keeps below [default: 70].",
)
@click.option(
    "--gc-max-allocs",
    type=click.IntRange(1),
    default=None,
    help="Allocations tracked before GC removes terminal ones [default: 50].",
)
@click.option(
    "--gc-parallel-destroys",
    type=click.IntRange(1),
    default=None,
    help="Allocations destroyed in parallel [default: 2].",
)
@click.option(
    "-dev",
    "--dev",
    "dev",
    is_flag=True,
    hidden=True,
    help="Dev mode (what `corral agent -dev` runs): destroy every allocation when the client stops.",
)
def client(config_file: Path | None, **options: Any) -> None:
    """Run the node agent: register this machine (fingerprinted CPU, memory, disk, kernel and
    OS attributes), heartbeat, run the allocations placed here with the enabled drivers (mock;
    raw_exec only when --driver or the config file enables it), report their status, and
    garbage-collect finished ones. Tasks keep running when the client stops; a restarted client
    re-attaches to them. With ACLs on, CORRAL_TOKEN (or NOMAD_TOKEN) must hold a token with
    node:write to register."""
    from client.agent import run_client
    from workers.runtime import stop_on_signals

    config = client_config(config_file, options)
    from app.settings.logging import configure

    settings = get_settings()
    configure("client", settings.log_level, settings.log_format)
    run_client(config, stop_on_signals(), metrics=_metrics_server(settings))


def _metrics_server(settings: Settings) -> Callable[[Collector], None] | None:
    """With CORRAL_METRICS_BIND: serve the client's own /v1/metrics there, Nomad's
    nomad.client.* gauges (the collector the agent hands over) beside the process's metrics.
    A bad or taken address stops the client before it registers, as it stops the other roles."""
    if not settings.metrics_bind:
        return None
    from prometheus_client import REGISTRY

    def serve(collector: Collector) -> None:
        REGISTRY.register(collector)
        serve_metrics(settings, "client")

    return serve


def client_config(config_file: Path | None, options: dict[str, Any]) -> ClientConfig:
    """The flags given (None: not given) over the config file over Nomad's defaults."""
    from client.config import ConfigError, build

    gc = {key.removeprefix("gc_"): options.pop(key) for key in list(options) if key.startswith("gc_")}
    try:
        file_values = _file_values(config_file) if config_file else {}
    except ConfigError as err:
        raise click.UsageError(str(err)) from err
    flags = {
        "server": options["server"] or (None if "server" in file_values else default_address()),
        "data_dir": options["data_dir"],
        "name": options["name"],
        "datacenter": options["datacenter"],
        "node_class": options["node_class"],
        "node_pool": options["node_pool"],
        "meta": _meta(options["meta"]),
        "drivers": options["drivers"],
        "reserved_cpu": options["reserved_cpu"],
        "reserved_memory_mb": options["reserved_memory"],
        "reserved_disk_mb": options["reserved_disk"],
        "reserved_ports": options["reserved_ports"],
        "cpu_total_mhz": options["cpu_total_compute"],
        "memory_total_mb": options["memory_total_mb"],
        "http_bind": options["http_bind"],
        "alloc_dir": options["alloc_dir"],
        "network_interface": options["network_interface"],
        "docker_endpoint": options["docker_endpoint"],
        "dev_mode": True if options["dev"] else None,
        "host_volumes": options["host_volumes"],
    }
    try:
        config = build(file_values, flags, gc)
    except ConfigError as err:
        raise click.UsageError(str(err)) from err
    return config


def _file_values(path: Path) -> JsonObject:
    """The config file's settings: the flat JSON file, or the client part of Nomad's agent
    configuration (its warnings about keys that mean nothing here go to stderr)."""
    from app.agentconfig.files import AgentConfigError
    from app.agentconfig.load import is_agent_config, load
    from client.config import ConfigError, load_file

    if not is_agent_config(path):
        return load_file(path)
    try:
        found = load([path], client_only=True)
    except AgentConfigError as err:
        raise ConfigError(str(err)) from None
    for warning in found.warnings:
        click.echo(f"==> WARNING: {warning}", err=True)
    return dict(found.client)


@click.command()
@click.option("--nodes", type=click.IntRange(1), default=100, show_default=True, help="How many mock nodes.")
@click.option(
    "--server", default=None, help="Server address [default: CORRAL_ADDR, NOMAD_ADDR or http://127.0.0.1:4646]."
)
@click.option(
    "--mode",
    type=click.Choice(["realistic", "compact"]),
    default="realistic",
    show_default=True,
    help="realistic: every node has its own connections and holds its own blocking query on its "
    "allocations, as `corral client` does, and heartbeats from a thread of their own, so no node's beat "
    "waits for other nodes' work; compact: one cluster-wide query for all nodes (cheaper, not what a "
    "real fleet costs).",
)
@click.option("--name-prefix", default="sim", show_default=True, help="Node names are <prefix>-00000, ...")
@click.option("-dc", "--datacenter", default="dc1", show_default=True, help="Datacenter of every node.")
@click.option("--cpu", type=click.IntRange(1), default=4000, show_default=True, help="MHz per node.")
@click.option("--memory", type=click.IntRange(1), default=8192, show_default=True, help="Memory MB per node.")
@click.option(
    "--concurrency",
    "--threads",
    "concurrency",
    type=click.IntRange(1),
    default=16,
    show_default=True,
    help="Registrations in flight at once (compact mode: every request).",
)
@click.option(
    "--nodes-per-address",
    type=click.IntRange(0),
    default=30,
    show_default=True,
    help="With a server on loopback, nodes per source address (127.0.0.2, 127.0.0.3, ...), so the "
    "servers' per-address connection limit can stay on; 0: one address for all.",
)
@click.option(
    "--stats-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the fleet's counters (heartbeats, on time, failures) as JSON here every 2 s and at exit.",
)
@click.option(
    "--data-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Keep the nodes' IDs and secrets here (fleet-nodes.json, mode 0600), so a restarted fleet "
    "takes its nodes and their allocations back, as `corral client` does; without it every run "
    "registers new nodes.",
)
def fleet(
    nodes: int,
    server: str | None,
    mode: str,
    name_prefix: str,
    datacenter: str,
    cpu: int,
    memory: int,
    concurrency: int,
    nodes_per_address: int,
    stats_file: Path | None,
    data_dir: Path | None,
) -> None:
    """Simulate a fleet for tests and benchmarks: register NODES mock nodes, heartbeat each
    within its TTL, run their allocations with the mock driver's semantics (run_for, exit_code,
    start_error) and report their status, all from one process. Busy or failing servers are
    waited out with jittered backoff; only a refused registration ends the fleet."""
    from app.settings.logging import configure
    from client.fleet.base import FleetConfig
    from client.fleet.fleet import run_fleet
    from client.fleet.identity import IdentityFileError
    from client.fleet.retry import Refused
    from workers.runtime import stop_on_signals

    settings = get_settings()
    configure("fleet", settings.log_level, settings.log_format)
    config = FleetConfig(
        server or default_address(),
        nodes,
        name_prefix,
        datacenter,
        cpu,
        memory,
        concurrency,
        mode="realistic" if mode == "realistic" else "compact",
        nodes_per_address=nodes_per_address,
        stats_file=stats_file,
        data_dir=data_dir,
    )
    try:
        run_fleet(config, stop_on_signals())
    except IdentityFileError as err:
        raise click.ClickException(str(err)) from err
    except Refused as err:
        raise click.ClickException(f"the servers refused a node: {err}") from err
