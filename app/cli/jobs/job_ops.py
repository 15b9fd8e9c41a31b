"""`corral job promote|eval|start|scaling-events` (and `restart`, from job_restart.py): Nomad's job commands that act
through routes other commands already use (deployments, evaluate, register, scale, the
client's restart), in Nomad's layout and exit codes."""

from __future__ import annotations

from urllib.parse import quote

import click

from app.cli.jobs.job_action import action
from app.cli.jobs.job_restart import restart
from app.cli.support import http
from app.cli.support.deployment_view import short
from app.cli.support.monitor import follow, monitor_options
from app.cli.support.output import columns, date
from app.wire.api.api_deployments import DeploymentPromoteRequest


def _path(job_id: str, action: str = "") -> str:
    path = f"/v1/job/{quote(job_id, safe='')}"
    return f"{path}/{action}" if action else path


def add_commands(job: click.Group) -> None:
    job.add_command(promote)
    job.add_command(eval_)
    job.add_command(start)
    job.add_command(scaling_events)
    job.add_command(restart)  # app/cli/jobs/job_restart.py
    job.add_command(action)  # app/cli/jobs/job_action.py


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
