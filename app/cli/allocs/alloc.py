"""`corral alloc ...`: operator commands on allocations, through the REST API."""

from __future__ import annotations

import sys

import click

from app.cli.allocs import alloc_metrics
from app.cli.allocs.alloc_stats import task_resources
from app.cli.jobs.job_status import render_allocs
from app.cli.support import http
from app.cli.support.monitor import follow, monitor_options
from app.cli.support.output import ago, columns, date, format_options, formatted, key_values
from app.cli.support.output import resolve as resolve_id
from app.wire.allocation import AllocationJson, AllocDeploymentStatusJson
from app.wire.api.api_client import AllocResourceUsageJson, CheckQueryResultJson
from app.wire.job import ResourcesSpec

FULL_ID_LENGTH = 36


@click.group()
def alloc() -> None:
    """Operate on allocations (CORRAL_ADDR, else NOMAD_ADDR, default http://127.0.0.1:4646)."""


def resolve(alloc_id: str) -> str:
    """A full allocation id, or the one allocation whose id starts with the given prefix."""
    return resolve_id("allocation", "/v1/allocations", alloc_id, render_allocs, full_length=FULL_ID_LENGTH)


@alloc.command()
@monitor_options
@click.option(
    "-no-shutdown-delay",
    "--no-shutdown-delay",
    "no_shutdown_delay",
    is_flag=True,
    help="Kill the tasks without waiting out the group's and tasks' shutdown_delay.",
)
@click.argument("alloc_id")
def stop(alloc_id: str, detach: bool, verbose: bool, no_shutdown_delay: bool) -> None:
    """Stop ALLOC_ID (a full id or a unique prefix) and have the scheduler place a replacement,
    as Nomad's `alloc stop`: the allocation is marked to migrate and an alloc-stop evaluation is
    created with it. Monitors the evaluation (-detach: prints it); an allocation already stopped
    or finished is an error."""
    full = resolve(alloc_id)
    params = {"no_shutdown_delay": "true"} if no_shutdown_delay else None
    response = http.post(f"/v1/allocation/{full}/stop", None, params=params)
    click.echo(f"Allocation {full} stop requested")
    follow(response.get("EvalID"), detach, verbose)


def render_checks(checks: dict[str, CheckQueryResultJson] | None) -> list[str]:
    """Nomad's "Nomad Service Checks" section (empty without checks): sorted rows of service,
    task ("(group)" for a group service's check), check name, mode and status."""
    if not checks:
        return []
    rows = sorted(
        [
            str(c.get("Service", "")),
            str(c.get("Task") or "(group)"),
            str(c.get("Check", "")),
            str(c.get("Mode", "")),
            str(c.get("Status", "")),
        ]
        for c in checks.values()
        if isinstance(c, dict)
    )
    return ["", "Nomad Service Checks:", *columns([["Service", "Task", "Name", "Mode", "Status"], *rows])]


def render_alloc(
    a: AllocationJson,
    verbose: bool,
    stats: AllocResourceUsageJson | None = None,
    checks: dict[str, CheckQueryResultJson] | None = None,
) -> str:
    def short(value: object) -> str:
        return str(value or "") if verbose else str(value or "")[:8]

    health = a.get("DeploymentStatus")
    metrics = a.get("Metrics")  # None: placed without metrics (switched off, or before they were kept)

    lines = key_values(
        [
            ("ID", a["ID"]),
            ("Eval ID", short(a.get("EvalID"))),
            ("Name", a.get("Name", "")),
            ("Node ID", short(a.get("NodeID"))),
            ("Node Name", a.get("NodeName", "")),
            ("Job ID", a.get("JobID", "")),
            ("Job Version", (a.get("Job") or {}).get("Version", 0)),
            ("Client Status", a.get("ClientStatus", "")),
            ("Client Description", a.get("ClientDescription") or "<none>"),
            ("Desired Status", a.get("DesiredStatus", "")),
            ("Desired Description", a.get("DesiredDescription") or "<none>"),
            ("Created", ago(a.get("CreateTime"))),
            ("Modified", ago(a.get("ModifyTime"))),
            *([("Deployment ID", short(a["DeploymentID"]))] if a.get("DeploymentID") else []),
            *([("Deployment Health", _health(health))] if isinstance(health, dict) else []),
            *(alloc_metrics.basic_lines(metrics) if verbose and metrics else []),
        ]
    )
    lines += render_checks(checks)
    for name, state in sorted((a.get("TaskStates") or {}).items()):
        lines += ["", f'Task "{name}" is "{state.get("State", "")}"']
        if stats is not None:
            usage = ((stats.get("Tasks") or {}).get(name) or {}).get("ResourceUsage")
            lines += [*task_resources(_task_resources(a, name), usage), ""]
        events = state.get("Events") or []
        if events:
            rows = [["Time", "Type", "Description"]]
            for event in reversed(events[-10:] if not verbose else events):
                description = event.get("DisplayMessage") or event.get("Message") or ""
                rows.append([date(event.get("Time")), str(event.get("Type", "")), str(description)])
            lines += ["Recent Events:", *columns(rows)]
    if verbose and metrics:  # as Nomad's: only with -verbose, after the tasks
        lines += alloc_metrics.section(metrics)
    return "\n".join(lines)


def _task_resources(a: AllocationJson, task: str) -> ResourcesSpec:
    for group in (a.get("Job") or {}).get("TaskGroups") or []:
        if group.get("Name") == a.get("TaskGroup"):
            for found in group.get("Tasks") or []:
                if found.get("Name") == task:
                    return found.get("Resources") or {}
    return {}


def _health(status: AllocDeploymentStatusJson) -> str:
    healthy = status.get("Healthy")
    return "unset" if healthy is None else ("healthy" if healthy else "unhealthy")


@alloc.command()
@click.option("-verbose", "--verbose", is_flag=True, help="Full IDs, every task event and the placement metrics.")
@click.option("-stats", "--stats", "with_stats", is_flag=True, help="Each task's measured resource use.")
@format_options
@click.argument("alloc_id")
def status(alloc_id: str, verbose: bool, with_stats: bool, as_json: bool, template: str | None) -> None:
    """Show ALLOC_ID (a full ID or a unique prefix) in Nomad's layout: its statuses, node, job,
    deployment health, and each task's state with its recent events (-stats: and its resources
    with the use its client measures; -verbose: and how its node was chosen)."""
    found = http.get(f"/v1/allocation/{resolve(alloc_id)}")
    if formatted(found, as_json, template):
        return
    stats: AllocResourceUsageJson | None = None
    if with_stats and found.get("ClientStatus") == "running":
        try:
            stats = http.get(f"/v1/client/allocation/{found['ID']}/stats")
        except http.ApiError as err:
            click.echo(f"Couldn't retrieve stats: {err.message}", err=True)  # as Nomad: the rest still prints
    click.echo(render_alloc(found, verbose, stats, _checks(found)))


def _checks(found: AllocationJson) -> dict[str, CheckQueryResultJson] | None:
    """The allocation's service check results; none when its client cannot say (as Nomad's)."""
    if found.get("ClientStatus") != "running":
        return None
    try:
        checks = http.get(f"/v1/client/allocation/{found['ID']}/checks")
    except http.ApiError:
        return None
    return checks if isinstance(checks, dict) else None


@alloc.command()
@click.option("-stderr", "--stderr", "stderr", is_flag=True, help="Show the task's standard error.")
@click.option("-f", "--follow", "follow_", is_flag=True, help="Keep printing new output until interrupted.")
@click.option("-tail", "--tail", "tail", is_flag=True, help="Show the end of the log (with -n).")
@click.option("-n", "lines", type=click.IntRange(min=0), default=10, show_default=True, help="Lines with -tail.")
@click.argument("alloc_id")
@click.argument("task", required=False)
def logs(alloc_id: str, task: str | None, stderr: bool, follow_: bool, tail: bool, lines: int) -> None:
    """Print the stdout (or -stderr) of TASK in ALLOC_ID, read from its client through the
    server. TASK may be left out when the allocation has one task. -f follows the log (the
    server streams what the task writes until the task is dead)."""
    full = resolve(alloc_id)
    task = task or _only_task(full)
    params: dict[str, http.QueryValue] = {"task": task, "type": "stderr" if stderr else "stdout", "plain": "true"}
    data = http.get_text(f"/v1/client/fs/logs/{full}", {**params, "origin": "start", "offset": 0})
    offset = len(data)
    if tail:
        data = b"".join(data.splitlines(keepends=True)[-lines:]) if lines else b""
    out = sys.stdout.buffer
    out.write(data)
    out.flush()
    if follow_:
        followed = {**params, "origin": "start", "offset": offset, "follow": "true"}
        for chunk in http.stream_text(f"/v1/client/fs/logs/{full}", followed):
            out.write(chunk)
            out.flush()


def _only_task(alloc_id: str) -> str:
    found = http.get(f"/v1/allocation/{alloc_id}")
    group = next(
        (g for g in (found.get("Job") or {}).get("TaskGroups") or [] if g.get("Name") == found.get("TaskGroup")), None
    )
    names = [t["Name"] for t in (group or {}).get("Tasks") or []] or sorted(found.get("TaskStates") or {})
    if len(names) != 1:
        raise click.UsageError(f"allocation {alloc_id[:8]} has tasks {', '.join(names) or '(none)'}; name one")
    return str(names[0])
