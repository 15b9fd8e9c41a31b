"""`corral job promote|eval|start|scaling-events|restart`: Nomad's job commands that act
through routes other commands already use (deployments, evaluate, register, scale, the
client's restart), in Nomad's layout and exit codes."""

from __future__ import annotations

from urllib.parse import quote

import click

from app.cli.support import http
from app.cli.support.deployment_view import short
from app.cli.support.monitor import follow, monitor_options, stamp
from app.cli.support.output import columns, date
from app.wire.allocation import AllocationListStubJson
from app.wire.api.api_allocs import AllocRestartRequest
from app.wire.api.api_deployments import DeploymentPromoteRequest


def _path(job_id: str, action: str = "") -> str:
    path = f"/v1/job/{quote(job_id, safe='')}"
    return f"{path}/{action}" if action else path


def add_commands(job: click.Group) -> None:
    job.add_command(promote)
    job.add_command(eval_)
    job.add_command(start)
    job.add_command(scaling_events)
    job.add_command(restart)


@click.command()
@click.option(
    "-group",
    "--group",
    "groups",
    multiple=True,
    metavar="GROUP",
    help="Promote only this group's canaries; repeatable.",
)
@monitor_options
@click.argument("job_id", metavar="JOB")
def promote(job_id: str, groups: tuple[str, ...], detach: bool, verbose: bool) -> None:
    """Promote the canaries of JOB's latest deployment (every group's, or -group's) and monitor
    the evaluation the promotion creates (-detach: print it)."""
    deployment = http.get(_path(job_id, "deployment"))
    if not deployment:
        raise click.ClickException(f'Job "{job_id}" has no deployment to promote')
    body: DeploymentPromoteRequest = {"DeploymentID": deployment["ID"], "All": not groups}
    if groups:
        body["Groups"] = list(groups)
    response = http.post(f"/v1/deployment/promote/{deployment['ID']}", body)
    follow(response.get("EvalID"), detach, verbose)


@click.command("eval")
@click.option(
    "-force-reschedule",
    "--force-reschedule",
    "force_reschedule",
    is_flag=True,
    help="Reschedule failed allocations now, even those waiting out a reschedule delay.",
)
@monitor_options
@click.argument("job_id", metavar="JOB")
def eval_(job_id: str, force_reschedule: bool, detach: bool, verbose: bool) -> None:
    """Create a new evaluation of JOB (as after a node change) and monitor it (-detach: print it)."""
    body = {"JobID": job_id, "EvalOptions": {"ForceReschedule": force_reschedule}}
    response = http.post(_path(job_id, "evaluate"), body)
    if detach:
        click.echo(f'Created eval ID: "{short(str(response["EvalID"]), verbose)}" ')
        return
    follow(response["EvalID"], False, verbose)


@click.command()
@monitor_options
@click.argument("job_id", metavar="JOB")
def start(job_id: str, detach: bool, verbose: bool) -> None:
    """Start the stopped JOB again: its current version registered with Stop unset, as a new
    version. Monitors the evaluation unless -detach (or the job is periodic or parameterized)."""
    found = http.get(_path(job_id))
    if not found.get("Stop"):
        raise click.ClickException(f'Job "{found.get("Name") or job_id}" has not been stopped')
    found["Stop"] = False
    response = http.put("/v1/jobs", {"Job": found})
    periodic, parameterized = bool(found.get("Periodic")), bool(found.get("ParameterizedJob"))
    if detach or periodic or parameterized:
        click.echo("Job start successful")
        if response.get("EvalID"):
            click.echo(f"Evaluation ID: {response['EvalID']}")
        return
    follow(response.get("EvalID"), False, verbose)


@click.command("scaling-events")
@click.option("-verbose", "--verbose", is_flag=True, help="Also each event's error flag, message and evaluation.")
@click.argument("job_id", metavar="JOB")
def scaling_events(job_id: str, verbose: bool) -> None:
    """List JOB's scaling events, newest first, per task group: the count asked, the count
    before, and when."""
    groups = http.get(_path(job_id, "scale")).get("TaskGroups") or {}
    events = [(name, e) for name, g in groups.items() for e in (g.get("Events") or [])]
    if not events:
        click.echo("No events found")
        return
    events.sort(key=lambda pair: -int(pair[1].get("Time") or 0))
    header = ["Task Group", "Count", "PrevCount"] + (["Error", "Message", "Eval ID"] if verbose else []) + ["Date"]
    rows = [header]
    for name, e in events:
        count = "<nil>" if e.get("Count") is None else str(e["Count"])
        row = [name, count, str(e.get("PreviousCount", 0))]
        if verbose:
            row += [str(bool(e.get("Error"))).lower(), str(e.get("Message") or ""), str(e.get("EvalID") or "<nil>")]
        rows.append([*row, date(e.get("Time"))])
    click.echo("\n".join(columns(rows)))


@click.command()
@click.option("-task", "--task", "task", help="Restart only this task of each allocation.")
@click.option("-group", "--group", "groups", multiple=True, help="Only this group's allocations; repeatable.")
@click.option("-all-tasks", "--all-tasks", "all_tasks", is_flag=True, help="Restart every task, not just running ones.")
@click.option("-yes", "--yes", is_flag=True, help="Do not ask for confirmation.")
@click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs.")
@click.argument("job_id", metavar="JOB")
def restart(job_id: str, task: str | None, groups: tuple[str, ...], all_tasks: bool, yes: bool, verbose: bool) -> None:
    """Restart the tasks of JOB's running allocations in place, one allocation at a time (as
    Nomad's job restart with its default batch size of 1): each allocation's running tasks
    (-all-tasks: every task, -task: that one). Asks first unless -yes. Exit 1 if a restart fails."""
    if task and all_tasks:
        raise click.UsageError("The -all-tasks option cannot be used with -task")
    listed: list[AllocationListStubJson] = http.get(_path(job_id, "allocations"))
    allocs = [
        a
        for a in listed
        if a.get("ClientStatus") == "running"
        and a.get("DesiredStatus") == "run"
        and (not groups or a.get("TaskGroup") in groups)
    ]
    if not allocs:
        click.echo(f'No allocations to restart for job "{job_id}"')
        return
    noun = "allocation" if len(allocs) == 1 else "allocations"
    if not yes and click.prompt(
        f"Are you sure you want to restart {len(allocs)} {noun}? [y/N]", default="", show_default=False
    ).strip().lower() not in ("y", "yes"):
        click.echo("Cancelling job restart")
        return
    click.echo(f"==> {stamp()}: Restarting {len(allocs)} {noun}")
    body: AllocRestartRequest = {"TaskName": task or "", "AllTasks": all_tasks}
    for a in sorted(allocs, key=lambda a: int(a.get("CreateIndex", 0))):
        ident = short(str(a["ID"]), verbose)
        which = "all tasks" if all_tasks else (f'task "{task}"' if task else "running tasks")
        click.echo(f'    {stamp()}: Restarting {which} in allocation "{ident}" for group "{a.get("TaskGroup")}"')
        try:
            http.put(f"/v1/client/allocation/{a['ID']}/restart", body)
        except http.ApiError as err:
            raise click.ClickException(f'Error restarting allocation "{ident}": {err.message}') from err
    click.echo(f"==> {stamp()}: Job restart finished")
