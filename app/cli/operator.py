"""`corral operator scheduler get-config | set-config` and `corral operator metrics`, through the
REST API, and `corral operator client-state`, which reads a stopped or running client's data
directory."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from app.cli.support import http
from app.cli.support.output import format_options, formatted
from app.wire.json import JsonObject, JsonValue

CONFIG_PATH = "/v1/operator/scheduler/configuration"
# Where a node agent keeps each allocation's record: <data_dir>/allocs/<alloc_id>/alloc.json
# (client/agent.py's allocs_dir, client/allocs/alloc_runner.py's RECORD; a unit test holds them equal).
ALLOCS_DIR, RECORD = "allocs", "alloc.json"
# With a custom alloc_dir, <data_dir>/alloc_dir holds its path (client/config.py's ALLOCS_POINTER).
ALLOCS_POINTER = "alloc_dir"
F = TypeVar("F", bound=Callable[..., Any])
# flag name -> (path into SchedulerConfig, help)
BOOL_FLAGS = {
    "memory-oversubscription": (
        ("MemoryOversubscriptionEnabled",),
        "Allow tasks to use memory beyond their reservation.",
    ),
    "reject-job-registration": (("RejectJobRegistration",), "Refuse job registrations (HTTP 403)."),
    "pause-eval-broker": (("PauseEvalBroker",), "Stop handing evaluations to workers."),
    "preempt-batch-scheduler": (("PreemptionConfig", "BatchSchedulerEnabled"), "Preemption for batch jobs."),
    "preempt-service-scheduler": (("PreemptionConfig", "ServiceSchedulerEnabled"), "Preemption for service jobs."),
    "preempt-sysbatch-scheduler": (("PreemptionConfig", "SysBatchSchedulerEnabled"), "Preemption for sysbatch jobs."),
    "preempt-system-scheduler": (("PreemptionConfig", "SystemSchedulerEnabled"), "Preemption for system jobs."),
}


@click.group()
def operator() -> None:
    """Cluster-wide operator settings (through CORRAL_ADDR, else NOMAD_ADDR)."""


@operator.group()
def scheduler() -> None:
    """The scheduler configuration: algorithm, preemption per scheduler type, and the
    broker and registration switches. Changes apply from the next evaluation on."""


@scheduler.command("get-config")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the configuration as JSON.")
def get_config(as_json: bool) -> None:
    """Show the current scheduler configuration."""
    config = http.get(CONFIG_PATH)["SchedulerConfig"]
    if as_json:
        click.echo(json.dumps(config, indent=2))
        return
    preemption = config["PreemptionConfig"]
    rows = [
        ("Scheduler Algorithm", config["SchedulerAlgorithm"]),
        ("Memory Oversubscription", config["MemoryOversubscriptionEnabled"]),
        ("Reject Job Registration", config["RejectJobRegistration"]),
        ("Pause Eval Broker", config["PauseEvalBroker"]),
        ("", None),
        ("Preemption Service Scheduler", preemption["ServiceSchedulerEnabled"]),
        ("Preemption SysBatch Scheduler", preemption["SysBatchSchedulerEnabled"]),
        ("Preemption System Scheduler", preemption["SystemSchedulerEnabled"]),
        ("Preemption Batch Scheduler", preemption["BatchSchedulerEnabled"]),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        click.echo(f"{name:<{width}} = {_text(value)}" if name else "")


def _text(value: object) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _bool_flags(command: F) -> F:
    for flag, (_, help_text) in reversed(BOOL_FLAGS.items()):
        command = click.option(f"-{flag}", f"--{flag}", flag.replace("-", "_"), type=click.BOOL, help=help_text)(
            command
        )
    return command


@scheduler.command("set-config")
@click.option(
    "-scheduler-algorithm",
    "--scheduler-algorithm",
    "scheduler_algorithm",
    type=click.Choice(["binpack", "spread"]),
    help="How nodes are scored: pack them full, or spread work out.",
)
@_bool_flags
@click.option(
    "-check-index",
    "--check-index",
    "check_index",
    type=click.IntRange(min=0),
    help="Update only if the configuration's ModifyIndex still equals this (check-and-set).",
)
def set_config(scheduler_algorithm: str | None, check_index: int | None, **flags: bool | None) -> None:
    """Change the scheduler configuration. Only the flags given change; booleans take
    true or false, e.g. -preempt-service-scheduler=true."""
    config = http.get(CONFIG_PATH)["SchedulerConfig"]
    if scheduler_algorithm is not None:
        config["SchedulerAlgorithm"] = scheduler_algorithm
    for flag, (path, _) in BOOL_FLAGS.items():
        value = flags.get(flag.replace("-", "_"))
        if value is not None:
            target = config
            for key in path[:-1]:
                target = target[key]
            target[path[-1]] = value
    params = {"cas": check_index} if check_index is not None else None
    result = http.put(CONFIG_PATH, config, params=params)
    if not result.get("Updated", False):
        click.echo("Scheduler configuration could not be atomically updated, please try again", err=True)
        sys.exit(1)
    click.echo("Scheduler configuration updated!")


@operator.command("metrics")
@click.option("-pretty", "pretty", is_flag=True, help="Pretty-print the JSON output.")
@click.option("-format", "fmt", metavar="FORMAT", default="", help="Output format: prometheus (default: JSON).")
@format_options
def metrics(pretty: bool, fmt: str, as_json: bool, template: str | None) -> None:
    """Print the cluster's metrics (GET /v1/metrics), as Nomad's `operator metrics`: the JSON
    summary, or Prometheus text with -format prometheus; -json and -t format the JSON summary."""
    params = {"format": fmt} if fmt else {}
    if as_json or template is not None:
        formatted(http.get("/v1/metrics", params=params), as_json, template)
        return
    text = http.get_text("/v1/metrics", params=params).decode()
    if pretty and fmt in ("", "json"):
        text = json.dumps(json.loads(text), indent=4)
    click.echo(text.rstrip("\n"))


@operator.command("client-state")
@click.argument("data_dir", required=False, metavar="<path_to_client_data_dir>")
def client_state(data_dir: str | None) -> None:
    """Print the state a node agent keeps in its data directory (`corral client --data-dir`) as
    JSON, as Nomad's `operator client-state`: per allocation its `Alloc`, `DeployStatus` (the
    health watch), `Identities`, and per task `LocalState`, `RemoteState` (the task state) and
    `DriverState` (the driver's handle). A client with a custom alloc_dir leaves its path in the
    data directory, and the allocations are read there."""
    if not data_dir:
        raise click.ClickException("This command takes one argument: <client-data-dir>")
    pointer = Path(data_dir) / ALLOCS_POINTER
    allocs = Path(pointer.read_text().strip()) if pointer.is_file() else Path(data_dir) / ALLOCS_DIR
    if not allocs.is_dir():
        raise click.ClickException(f"failed to open client state: {allocs} is not a directory")
    found: JsonObject = {}
    for alloc_dir in sorted(allocs.iterdir()):
        record_path = alloc_dir / RECORD
        try:
            record = json.loads(record_path.read_text())
        except (OSError, ValueError) as err:
            click.echo(f"skipping {record_path}: {err}", err=True)
            continue
        if isinstance(record, dict):
            found[alloc_dir.name] = _client_alloc(record)
    click.echo(json.dumps({"Allocations": found}))


def _client_alloc(record: JsonObject) -> JsonObject:
    tasks = record.get("tasks")
    return {
        "Alloc": record.get("alloc"),
        "ClientStatus": record.get("client_status"),
        "DeployStatus": record.get("health"),
        "Identities": record.get("identities"),
        "Tasks": {name: _task_state(saved) for name, saved in tasks.items()} if isinstance(tasks, dict) else {},
    }


def _task_state(saved: JsonValue) -> JsonObject:
    if not isinstance(saved, dict):
        return {"LocalState": None, "RemoteState": None, "DriverState": None}
    return {
        "LocalState": {"ArtifactsDone": saved.get("artifacts_done")},
        "RemoteState": saved.get("state"),
        "DriverState": saved.get("handle"),
    }
