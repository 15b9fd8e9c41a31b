"""`raw_exec`: the command as a process group on the host, with no isolation (Nomad's raw_exec).
It runs as the client's user, or as the task's `user` when one is set (and the client's
user.denylist does not forbid it, where user.checked_drivers lists raw_exec)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import psutil

from client.drivers.base import (
    DEFAULT_KILL_SIGNAL,
    KILLED,
    UNTRAPPABLE,
    WRAPPER,
    Handle,
    StartError,
    TaskSpec,
    log_paths,
    open_log,
    signal_number,
)
from client.drivers.users import Identity, UserPolicy, identity


class RawExecHandle:
    def __init__(self, pid: int, created: float, exit_file: Path, process: subprocess.Popen[bytes] | None) -> None:
        self.pid, self.created, self.exit_file, self._process = pid, created, exit_file, process

    def state(self) -> dict[str, Any]:
        return {"pid": self.pid, "created": self.created, "exit_file": str(self.exit_file)}

    def _alive(self) -> bool:
        if self._process is not None:
            return self._process.poll() is None
        try:
            proc = psutil.Process(self.pid)
            # The pid may have been reused by an unrelated process since we saved it.
            return abs(proc.create_time() - self.created) < 0.5 and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def _exit_code(self) -> int:
        if self._process is not None and self._process.returncode is not None and self._process.returncode >= 0:
            return self._process.returncode
        with contextlib.suppress(OSError, ValueError):
            return int(self.exit_file.read_text().strip())
        return KILLED

    def wait(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        while self._alive():
            if time.monotonic() >= deadline:
                return None
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(max(0.0, min(0.5, deadline - time.monotonic())))
            else:
                time.sleep(min(0.2, max(0.0, deadline - time.monotonic())))
        return self._exit_code()

    def kill(self, timeout_s: float, signal_name: str = DEFAULT_KILL_SIGNAL) -> int:
        """The kill signal to the whole process group, then SIGKILL to whatever is left of it once
        the task has exited or kill_timeout has passed: nothing it forked survives."""
        try:
            signum = signal_number(signal_name)
        except StartError:
            signum = signal.SIGINT  # as Nomad's SignalTask does with a name it does not know
        self._signal(signum)
        code = self.wait(timeout_s)
        self._signal(signal.SIGKILL)
        if code is None:
            code = self.wait(5.0)
        return KILLED if code is None else code

    def _signal(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.pid, signum)

    def pids(self) -> list[int]:
        return [self.pid] if self._alive() else []

    def signal(self, signum: int) -> None:
        """To every process of the task but the wrapper: the wrapper traps only the kill
        signals, and any other (SIGUSR1's default is to terminate) would end it, and with it
        the record of the task's exit, while the task itself kept running."""
        try:
            processes = psutil.Process(self.pid).children(recursive=True)
        except psutil.Error:
            return
        for process in processes:
            with contextlib.suppress(psutil.Error):
                process.send_signal(signum)


def link_mounts(task: TaskSpec, task_dir: Path) -> None:
    """raw_exec has no filesystem of its own to bind into (Nomad's raw_exec refuses host volumes
    altogether): each mount's host path is exposed as a symlink at its destination taken inside
    the task directory, `/data` -> `<task dir>/data`. read_only cannot be enforced this way."""
    for mount in task.mounts:
        # normpath, not resolve: a link made by an earlier start must not be followed.
        link = Path(os.path.normpath(task_dir / mount.task_path.lstrip("/")))
        if link == Path(os.path.normpath(task_dir)) or not link.is_relative_to(os.path.normpath(task_dir)):
            raise StartError(f"volume_mount destination {mount.task_path!r} must name a path inside the task directory")
        link.parent.mkdir(parents=True, exist_ok=True)
        if link.is_symlink():
            link.unlink()
        elif link.exists():
            raise StartError(f"volume_mount destination {mount.task_path!r} already exists in the task directory")
        link.symlink_to(mount.host_path, target_is_directory=True)


def enter_netns(netns: str) -> list[str]:
    return ["nsenter", f"--net={netns}", "--"]


def as_user(who: Identity) -> list[str]:
    groups = ["--groups", ",".join(map(str, who.groups))] if who.groups else ["--clear-groups"]
    return ["setpriv", f"--reuid={who.uid}", f"--regid={who.gid}", *groups, "--"]


class RawExec:
    name = "raw_exec"

    def __init__(self, users: UserPolicy | None = None) -> None:
        self.users = users or UserPolicy()

    def _identity(self, task: TaskSpec, task_dir: Path, exit_file: Path) -> Identity | None:
        """The task's user (None: the client's own). Its directories and the exit record become
        its own, so it can write them as it could as the client's user."""
        if not task.user:
            return None
        self.users.check(self.name, task.user)
        who = identity(task.user)
        for name in ("local", "secrets", "tmp"):
            directory = task_dir / name
            directory.mkdir(parents=True, exist_ok=True)
            os.chown(directory, who.uid, who.gid)
        exit_file.touch()
        os.chown(exit_file, who.uid, who.gid)
        return who

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle:
        command = task.config.get("command")
        if not isinstance(command, str) or not command:
            raise StartError("config.command is required")
        args = task.config.get("args") or []
        if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
            raise StartError("config.args must be a list of strings")
        kill = signal_number(task.kill_signal)
        traps = " ".join(sorted({s.name[3:] for s in (signal.SIGINT, signal.SIGTERM, kill) if s not in UNTRAPPABLE}))
        link_mounts(task, task_dir)
        exit_file = task_dir / "exit_code"
        exit_file.unlink(missing_ok=True)
        try:
            who = self._identity(task, task_dir, exit_file)
        except OSError as error:
            raise StartError(f"handing the task directory to user {task.user!r}: {error}") from error
        argv = ["/bin/sh", "-c", WRAPPER.format(traps=traps), "sh", str(exit_file), command, *map(str, args)]
        joins = task.network_mode in ("bridge", "none") and bool(task.netns)
        if joins:
            # Nomad's raw_exec joins the group's network namespace too. nsenter and setpriv exec
            # in turn, so the task keeps the pid; the user is dropped after the namespace is joined.
            argv = [*enter_netns(task.netns), *([] if who is None else as_user(who)), *argv]
        stdout, stderr = log_paths(task, logs)
        with open_log(stdout) as out, open_log(stderr) as err:
            try:
                process = subprocess.Popen(
                    argv,
                    cwd=task_dir,
                    env=dict(task.env),  # built from scratch: never the client's own environment
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=err,
                    start_new_session=True,  # its own process group, killed whole; outlives a client crash
                    user=None if who is None or joins else who.uid,
                    group=None if who is None or joins else who.gid,
                    extra_groups=None if who is None or joins else list(who.groups),
                )
            except (OSError, ValueError) as error:  # ValueError: a NUL byte in an argument or variable
                raise StartError(str(error)) from error
        created = psutil.Process(process.pid).create_time()
        return RawExecHandle(process.pid, created, exit_file, process)

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None:
        try:
            return RawExecHandle(int(saved["pid"]), float(saved["created"]), Path(saved["exit_file"]), None)
        except (KeyError, TypeError, ValueError):
            return None
