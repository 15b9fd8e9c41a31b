"""`corral alloc fs|restart|signal`: Nomad's commands on a running allocation, answered by the
client that runs it (through the server's /v1/client/... routes). Same layout as Nomad's
output; exit 0 on success, 1 on any error (printed on stderr)."""

from __future__ import annotations

import sys

import click

from app.cli.allocs.alloc import alloc, resolve
from app.cli.allocs.alloc_stats import ibytes
from app.cli.support import http
from app.cli.support.output import columns
from app.wire.api.api_allocs import AllocRestartRequest, AllocSignalRequest
from app.wire.api.api_client import AllocFileInfoJson


def _file_row(info: AllocFileInfoJson, machine: bool, with_type: bool) -> list[str]:
    name = str(info.get("Name", "")) + ("/" if info.get("IsDir") else "")
    size = int(info.get("Size") or 0)
    row = [str(info.get("FileMode", "")), str(size) if machine else ibytes(size), str(info.get("ModTime", ""))]
    return [*row, str(info.get("ContentType", "")), name] if with_type else [*row, name]


@alloc.command("fs")
@click.option("-H", "machine", is_flag=True, help="Machine friendly output (sizes in bytes).")
@click.option("-stat", "--stat", "stat_", is_flag=True, help="Show the file's stat information instead.")
@click.argument("alloc_id")
@click.argument("path", required=False, default="/")
def fs(alloc_id: str, path: str, machine: bool, stat_: bool) -> None:
    """List the directory at PATH in ALLOC_ID's allocation directory, or print the file there
    (PATH is relative to the allocation directory; the root when left out). -stat prints
    the file's mode, size, time and content type instead."""
    full = resolve(alloc_id)
    info = http.get(f"/v1/client/fs/stat/{full}", {"path": path})
    if stat_:
        rows = [["Mode", "Size", "Modified Time", "Content Type", "Name"], _file_row(info, machine, True)]
        click.echo("\n".join(columns(rows)))
        return
    if info.get("IsDir"):
        files = http.get(f"/v1/client/fs/ls/{full}", {"path": path})
        rows = [["Mode", "Size", "Modified Time", "Name"], *(_file_row(f, machine, False) for f in files)]
        click.echo("\n".join(columns(rows)))
        return
    out = sys.stdout.buffer
    out.write(http.get_text(f"/v1/client/fs/cat/{full}", {"path": path}))
    out.flush()


def _check_task(full: str, task: str) -> None:
    """Nomad's check before it asks the client: the task must be one of the allocation's."""
    found = http.get(f"/v1/allocation/{full}")
    group = next(
        (g for g in (found.get("Job") or {}).get("TaskGroups") or [] if g.get("Name") == found.get("TaskGroup")), None
    )
    names = sorted({t["Name"] for t in (group or {}).get("Tasks") or []} | set(found.get("TaskStates") or {}))
    if task not in names:
        raise click.ClickException(f"Could not find task named: {task}, Tasks available: {', '.join(names)}")


def _task_request(
    alloc_id: str, task: str, action: str, body: AllocRestartRequest | AllocSignalRequest, failure: str
) -> None:
    """PUT `body` to the client's `action` route for ALLOC_ID (a prefix), after Nomad's check
    that TASK, when named, is one of its tasks; an API error is `failure` and its message."""
    full = resolve(alloc_id)
    if task:
        _check_task(full, task)
    try:
        http.put(f"/v1/client/allocation/{full}/{action}", body)
    except http.ApiError as err:
        raise click.ClickException(f"{failure}{err.message}") from err


@alloc.command()
@click.option("-task", "--task", "task_option", default="", help="The task to restart (over the TASK argument).")
@click.option("-all-tasks", "--all-tasks", "all_tasks", is_flag=True, help="Restart every task, not only running ones.")
@click.argument("alloc_id")
@click.argument("task", required=False, default="")
def restart(alloc_id: str, task: str, task_option: str, all_tasks: bool) -> None:
    """Restart TASK of ALLOC_ID in place (every running task when none is named); the client
    kills and starts it again, outside its restart policy."""
    task = task_option or task
    if task and all_tasks:
        raise click.ClickException("The -all-tasks option is not allowed when restarting a specific task.")
    failure = f"Failed to restart {'task' if task else 'allocation'}:\n\n"
    _task_request(alloc_id, task, "restart", {"TaskName": task, "AllTasks": all_tasks}, failure)


@alloc.command()
@click.option("-s", "signal_", default="SIGKILL", show_default=True, help="The signal to send.")
@click.option("-task", "--task", "task_option", default="", help="The task to signal (over the TASK argument).")
@click.argument("alloc_id")
@click.argument("task", required=False, default="")
def signal(alloc_id: str, task: str, task_option: str, signal_: str) -> None:
    """Send a signal (-s, default SIGKILL) to TASK of ALLOC_ID, or to all its running tasks."""
    task = task_option or task
    _task_request(alloc_id, task, "signal", {"Task": task, "Signal": signal_}, "Error signalling allocation: ")
