"""A command run to completion in a running task's context, as a script check or a template's
change script runs it: on the host in the task's directory for raw_exec, inside the task's
namespaces, chroot and user for exec (the way `alloc exec` enters), and in the task's container
for docker. Output is kept (the check's result shows it); a command past its timeout is killed
with everything it started and reported as such."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from client.drivers import DockerHandle, ExecHandle, StartError
from client.drivers.docker_daemon import DAEMON_ERRORS


@dataclass(frozen=True)
class TaskContext:
    """Where a command in the task runs: its driver, directory, environment, user and handle."""

    driver: str
    cwd: Path
    env: dict[str, str]
    user: str = ""
    handle: object = None


@dataclass(frozen=True)
class CommandResult:
    exit_code: int
    output: str
    timed_out: bool = False


class CommandFailed(Exception):
    """The command could not be started (not found, the task gone, the daemon refusing)."""


NO_PROCESSES = frozenset({"mock"})  # drivers whose tasks are no process to run a command beside


def run_in_task(context: TaskContext, argv: list[str], timeout_s: float) -> CommandResult:
    if context.driver in NO_PROCESSES:
        raise CommandFailed(f"the {context.driver} driver cannot run commands in its tasks")
    if isinstance(context.handle, DockerHandle):
        return _in_container(context.handle, argv, timeout_s)
    command, cwd = argv, context.cwd
    if isinstance(context.handle, ExecHandle):
        try:
            command, cwd = context.handle.enter(argv, context.user), Path("/")
        except StartError as err:
            raise CommandFailed(str(err)) from None
    return _host_process(command, cwd, context.env, timeout_s)


def _host_process(command: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> CommandResult:
    try:
        process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    except (OSError, ValueError) as err:
        raise CommandFailed(str(err)) from None
    try:
        output, _ = process.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)  # its whole group: a shell's children too
        output, _ = process.communicate()
        return CommandResult(-1, output.decode(errors="replace"), timed_out=True)
    return CommandResult(process.returncode, output.decode(errors="replace"))


def _in_container(handle: DockerHandle, argv: list[str], timeout_s: float) -> CommandResult:
    """docker exec through the Engine API; the daemon has no exec timeout, so a thread waits and
    the command's host process is killed when the time is up."""
    api = handle.client.api
    try:
        exec_id = str(api.exec_create(handle.container_id, argv, stdout=True, stderr=True)["Id"])
    except DAEMON_ERRORS as err:
        raise CommandFailed(str(err)) from None
    chunks: list[bytes] = []
    failure: list[BaseException] = []

    def collect() -> None:
        try:
            chunks.append(api.exec_start(exec_id))
        except DAEMON_ERRORS as err:
            failure.append(err)

    reader = threading.Thread(target=collect, name="docker-script-check", daemon=True)
    reader.start()
    reader.join(timeout_s)
    if reader.is_alive():
        _kill_exec(handle, exec_id)
        reader.join(5.0)
        return CommandResult(-1, b"".join(chunks).decode(errors="replace"), timed_out=True)
    if failure:
        raise CommandFailed(str(failure[0]))
    try:
        code = api.exec_inspect(exec_id).get("ExitCode")
    except DAEMON_ERRORS as err:
        raise CommandFailed(str(err)) from None
    return CommandResult(int(code) if code is not None else -1, b"".join(chunks).decode(errors="replace"))


def _kill_exec(handle: DockerHandle, exec_id: str) -> None:
    with contextlib.suppress(*DAEMON_ERRORS):
        pid = int(handle.client.api.exec_inspect(exec_id).get("Pid") or 0)
        if pid:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
