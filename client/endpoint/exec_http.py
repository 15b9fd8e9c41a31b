"""The client's side of `alloc exec` (GET /v1/client/allocation/<id>/exec, signed by the
servers like every client route): checks the request as Nomad's client does, starts the
command in the task's context (exec_session.py), and only then answers the upgrade, so a
refusal is an ordinary signed 4xx that the server relays.

The mock driver runs no process, so it has no context to run a command in: exec into a mock
task is refused (400 naming `task`), where Nomad's mock driver fakes a limited exec. Into an
exec task, the command enters the task's namespaces and chroot as its user (ExecHandle.enter)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from client.drivers import DockerHandle, ExecHandle, StartError
from client.drivers.docker_daemon import DAEMON_ERRORS
from client.endpoint.alloc_fs import FsError
from client.endpoint.exec_docker import DockerExecSession
from client.endpoint.exec_session import ExecSession, ExecSpec
from client.endpoint.http_api import Local, Query
from client.tasks import task_state

PATH = re.compile(r"^/v1/client/allocation/([0-9a-f-]{36})/exec$")
EXEC_DRIVERS = frozenset({"raw_exec", "exec", "docker"})


def _command(query: Query) -> list[str]:
    try:
        command = json.loads(query.get("command", ""))
    except ValueError:
        raise FsError(400, "command", "must be a JSON array of strings") from None
    if not isinstance(command, list) or not all(isinstance(p, str) for p in command) or not command:
        raise FsError(400, "command", "command is not present: a non-empty JSON array of strings")
    return command


def prepare(local: Local, alloc_id: str, query: Query) -> ExecSession | DockerExecSession:
    """The started command, or FsError with Nomad's status and message for what is wrong."""
    task = query.get("task", "")
    if not task:
        raise FsError(400, "task", "must provide a valid task name")
    command = _command(query)
    runner = local.runner_of(alloc_id)
    if runner is None:
        raise FsError(404, "AllocID", f"allocation {alloc_id} is not on this node")
    task_runner = runner.tasks.get(task)
    if task_runner is None:
        raise FsError(400, "task", f"unknown task name {task!r}")
    if task_runner.spec.driver not in EXEC_DRIVERS:
        raise FsError(400, "task", f"task {task!r} uses the {task_runner.spec.driver} driver, which cannot exec")
    if not task_state.started(task_runner.state):
        raise FsError(404, "task", f"task {task!r} not started yet.")
    if runner.terminal or task_runner.handle is None or task_runner.state.get("State") != "running":
        raise FsError(404, "task", f"task {task!r} is not running.")
    tty = query.get("tty") == "true"
    handle = task_runner.handle
    if isinstance(handle, DockerHandle):
        try:  # in the task's container, with the container's environment (as docker exec runs)
            return DockerExecSession(handle.client, handle.container_id, command, tty)
        except DAEMON_ERRORS as err:
            raise FsError(400, "command", f"failed to start {command[0]!r}: {err}") from None
    cwd = task_runner.task_dir
    if isinstance(handle, ExecHandle):  # into the task's namespaces, chroot and user
        try:
            command, cwd = handle.enter(command, task_runner.spec.user), Path("/")
        except StartError as err:
            raise FsError(404, "task", f"task {task!r} is not running: {err}") from None
    spec = ExecSpec(command, tty, dict(task_runner.spec.env), cwd)
    try:
        return ExecSession(spec)
    except (OSError, ValueError) as err:
        raise FsError(400, "command", f"failed to start {command[0]!r}: {err}") from None
