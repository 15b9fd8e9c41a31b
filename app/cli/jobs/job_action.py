"""`corral action` and `corral job action` (Nomad 1.7): run one of a job's `action` blocks in a
running allocation, through GET /v1/job/:id/action (an exec session: the output streams back and
the exit code is the action's). Without -alloc, -group and -task pick a random running
allocation of that group, as Nomad's command does."""

from __future__ import annotations

import sys
from urllib.parse import quote, urlencode

import click

from app.cli.allocs.alloc import resolve
from app.cli.allocs.alloc_exec import run_session, task_of
from app.cli.support import http
from app.cli.support.output import GoBoolCommand
from app.wire.allocation import AllocationListStubJson


def _random_alloc(job_id: str, group: str) -> str:
    import random  # here: it costs the CLI's start-up a few milliseconds

    listed: list[AllocationListStubJson] = http.get(f"/v1/job/{quote(job_id, safe='')}/allocations")
    running = [a for a in listed if a.get("ClientStatus") == "running" and a.get("TaskGroup") == group]
    if not running:
        raise click.ClickException(
            f"Error fetching allocations: job {job_id!r} has no running allocation of group {group!r}"
        )
    return str(random.choice(running)["ID"])


def action_path(job_id: str, action: str, alloc_id: str, task: str, tty: bool, namespace: str) -> str:
    params = {"action": action, "allocID": alloc_id, "task": task, "tty": "true" if tty else "false"}
    scoped = dict(http.scoped(params) or params)
    scoped["namespace"] = namespace  # the allocation's own: the job is looked up there
    return f"/v1/job/{quote(job_id, safe='')}/action?{urlencode(scoped)}"


@click.command("action", cls=GoBoolCommand)
@click.option("-job", "--job", "job_id", default="", help="The job whose action to run (required).")
@click.option(
    "-alloc", "--alloc", "alloc_id", default="", help="The allocation to run it in (an ID or a unique prefix)."
)
@click.option("-group", "--group", default="", help="Without -alloc: a random running allocation of this group.")
@click.option("-task", "--task", default="", help="The task whose action it is (required without -alloc).")
@click.option("-i/-no-i", "stdin_on", default=True, help="Pass stdin to the action (-i=false to disable).")
@click.option(
    "-t/-no-t", "tty", default=None, help="Allocate a pseudo-tty [default: when stdin and stdout are terminals]."
)
@click.option("-e", "escape", default="~", show_default=True, help="The escape character with a tty ('none': off).")
@click.argument("action")
def action(
    action: str, job_id: str, alloc_id: str, group: str, task: str, stdin_on: bool, tty: bool | None, escape: str
) -> None:
    """Run ACTION, one of the job's `action` blocks, in a running allocation of the job. Exits
    with the action's exit code. With ACLs, needs alloc-exec on the job's namespace (and
    alloc-node-exec for raw_exec tasks)."""
    if not job_id:
        raise click.UsageError("A job ID is required")
    tty = tty if tty is not None else sys.stdin.isatty() and sys.stdout.isatty()
    if tty and not stdin_on:
        raise click.UsageError("-i must be enabled if running with tty")
    escape = "" if escape == "none" else escape
    if len(escape) > 1:
        raise click.UsageError("-e requires 'none' or a single character")
    if not alloc_id:
        if not group:
            raise click.UsageError("A group name is required if no allocation is provided")
        if not task:
            raise click.UsageError("A task name is required if no allocation is provided")
        full = _random_alloc(job_id, group)
    else:
        full = resolve(alloc_id)
    found = http.get(f"/v1/allocation/{full}")
    path = action_path(job_id, action, full, task_of(found, task), tty, str(found.get("Namespace") or "default"))
    sys.exit(run_session(path, tty, escape, stdin_on))
