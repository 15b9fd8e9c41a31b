"""`exec`: the command isolated as Nomad's exec driver isolates it, without a container engine.

It runs chrooted in its task directory (the client's chroot_env bound read-only, alloc/ bound
in), in new PID, mount, IPC and UTS namespaces, inside cgroups enforcing its memory, CPU shares
and cores, as its `user` (nobody by default) with every capability dropped. A launcher process
(client/isolation/launcher.py) holds the task and records its end, so the task outlives a
restarted client, which re-attaches to it."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from client.drivers.base import (
    DEFAULT_KILL_SIGNAL,
    KILLED,
    Handle,
    StartError,
    TaskSpec,
    log_paths,
    open_log,
    signal_number,
)
from client.drivers.users import Identity, UserPolicy, identity
from client.isolation import launcher
from client.isolation.cgroups import TaskCgroups, missing_controllers
from client.isolation.chroot import DEFAULT_CHROOT_ENV, binds

DEFAULT_USER = "nobody"  # Nomad's exec default
LAUNCH_TIMEOUT_S = 30.0
HOSTNAME_MAX = 63
TASK_DIRS = ("local", "secrets", "tmp")  # the task's own directories: its user's
SHARED_WRITABLE = ("data", "tmp")  # alloc/… every task of the group writes (Nomad's 0777)
NSENTER, SETPRIV = "/usr/bin/nsenter", "/usr/bin/setpriv"  # util-linux: alloc exec's way in


@dataclass(frozen=True)
class ExecSettings:
    """The client's configuration as the exec driver uses it."""

    chroot_env: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CHROOT_ENV))
    cgroup_parent: str = "corral"
    users: UserPolicy = field(default_factory=UserPolicy)


def unusable_reason() -> str | None:
    """Why exec cannot work on this host (None when it can): it needs root and cgroups."""
    if sys.platform != "linux":
        return "exec needs Linux"
    if os.geteuid() != 0:
        return "exec needs the client to run as root"
    missing = missing_controllers()
    if missing:
        return f"exec needs the cgroup v1 controllers {', '.join(missing)}"
    return None


class ExecHandle:
    def __init__(
        self,
        launcher_pid: int,
        created: float,
        task_pid: int,
        exit_file: Path,
        cgroups: TaskCgroups,
        process: subprocess.Popen[bytes] | None,
    ) -> None:
        self.launcher_pid, self.created, self.task_pid = launcher_pid, created, task_pid
        self.exit_file, self.cgroups, self._process = exit_file, cgroups, process

    def state(self) -> dict[str, Any]:
        return {
            "launcher_pid": self.launcher_pid,
            "created": self.created,
            "task_pid": self.task_pid,
            "exit_file": str(self.exit_file),
            "cgroup": self.cgroups.name,
        }

    def _launcher_alive(self) -> bool:
        if self._process is not None:
            return self._process.poll() is None
        try:
            proc = psutil.Process(self.launcher_pid)
            # The pid may have been reused by an unrelated process since we saved it.
            return abs(proc.create_time() - self.created) < 0.5 and proc.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    def _alive(self) -> bool:
        # A launcher that was killed leaves the task running: its cgroup still tells.
        return self._launcher_alive() or bool(self.cgroups.procs())

    def _record(self) -> dict[str, Any]:
        with contextlib.suppress(OSError, ValueError):
            found = json.loads(self.exit_file.read_text())
            if isinstance(found, dict):
                return found
        return {}

    def wait(self, timeout_s: float) -> int | None:
        deadline = time.monotonic() + timeout_s
        while self._alive():
            if time.monotonic() >= deadline:
                return None
            pause = max(0.0, min(0.2, deadline - time.monotonic()))
            if self._process is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._process.wait(pause)
            else:
                time.sleep(pause)
        self.cgroups.remove()  # the launcher's job; done again for a launcher that was killed
        code = self._record().get("exit_code")
        return code if isinstance(code, int) else KILLED

    def oom_killed(self) -> bool:
        return bool(self._record().get("oom_killed"))

    def kill(self, timeout_s: float, signal_name: str = DEFAULT_KILL_SIGNAL) -> int:
        """The kill signal to the task, then SIGKILL to every process of its cgroup once it has
        exited or kill_timeout has passed: nothing it forked survives."""
        try:
            signum = signal_number(signal_name)
        except StartError:
            signum = signal.SIGINT  # as Nomad's SignalTask does with a name it does not know
        self.signal(signum)
        code = self.wait(timeout_s)
        self.cgroups.kill()
        if code is None:
            code = self.wait(5.0)
        return KILLED if code is None else code

    def pids(self) -> list[int]:
        """The task's first process (PID 1 inside): its tree is the whole task."""
        return [self.task_pid] if self.task_pid in self.cgroups.procs() else []

    def enter(self, command: list[str], user: str) -> list[str]:
        """`command` as `alloc exec` runs it in the task's context: inside its namespaces and
        chroot (util-linux nsenter), as its user without capabilities (setpriv, which must be
        in the chroot: /usr is by default). StartError when the task no longer runs."""
        if self.task_pid not in self.cgroups.procs():
            raise StartError("the task is not running")
        who = identity(user or DEFAULT_USER)
        groups = ",".join(str(g) for g in who.groups)
        drop = [f"--reuid={who.uid}", f"--regid={who.gid}", f"--groups={groups}" if groups else "--clear-groups"]
        privileges = [*drop, "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs"]
        namespaces = ["-t", str(self.task_pid), "-m", "-u", "-i", "-p", "-r", "-w"]
        return [NSENTER, *namespaces, "--", SETPRIV, *privileges, "--", *command]

    def signal(self, signum: int) -> None:
        """To the task's first process, if it is still the task's (never a reused pid)."""
        if self.task_pid in self.cgroups.procs():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.task_pid, signum)


# Modes whose tasks join the allocation's namespace (bridge: attached by CNI; none: loopback only).
JOINED_MODES = ("bridge", "none")


class Exec:
    name = "exec"

    def __init__(self, settings: ExecSettings | None = None) -> None:
        self.settings = settings or ExecSettings()

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle:
        argv = _argv(task.config)
        if task.network_mode not in ("host", "", *JOINED_MODES):
            raise StartError(f"network mode {task.network_mode!r} is not supported by the exec driver on this node")
        if task.network_mode in JOINED_MODES and not task.netns:
            raise StartError(f"{task.network_mode} network mode: the allocation has no network namespace")
        reason = unusable_reason()
        if reason is not None:
            raise StartError(reason)
        user = task.user or DEFAULT_USER
        self.settings.users.check(self.name, user)
        who = identity(user)
        shared = (task.alloc_dir or task_dir.parent) / "alloc"
        _hand_over(task_dir, shared, who)
        cgroups = TaskCgroups.of(self.settings.cgroup_parent, task.alloc_id or task_dir.parent.name, task.name)
        try:
            procs = cgroups.create(task.limits)
        except OSError as err:
            cgroups.remove(attempts=1)
            raise StartError(f"creating the task's cgroups: {err}") from err
        exit_file = task_dir.parent / f".{task.name}.exit.json"  # outside the chroot
        exit_file.unlink(missing_ok=True)
        spec = {
            "root": str(task_dir),
            "binds": binds(self.settings.chroot_env, shared, task.mounts),
            "procs": [str(p) for p in procs],
            "cgroups": [str(d) for d in reversed(cgroups.directories())],
            "oom_control": str(cgroups.v1("memory") / "memory.oom_control"),
            "hostname": _hostname(task.name),
            "uid": who.uid,
            "gid": who.gid,
            "groups": list(who.groups),
            "cwd": "/",
            "argv": argv,
            "env": task.env,
            "exit_file": str(exit_file),
            "netns": task.netns if task.network_mode in JOINED_MODES else "",
        }
        try:
            process, task_pid = _launch(spec, task, logs)
        except StartError:
            cgroups.remove(attempts=1)
            raise
        created = psutil.Process(process.pid).create_time()
        return ExecHandle(process.pid, created, task_pid, exit_file, cgroups, process)

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None:
        try:
            return ExecHandle(
                int(saved["launcher_pid"]),
                float(saved["created"]),
                int(saved["task_pid"]),
                Path(saved["exit_file"]),
                TaskCgroups(str(saved["cgroup"])),
                None,
            )
        except (KeyError, TypeError, ValueError):
            return None


def _argv(config: dict[str, Any]) -> list[str]:
    command = config.get("command")
    if not isinstance(command, str) or not command:
        raise StartError("config.command is required")
    args = config.get("args") or []
    if not isinstance(args, list) or not all(isinstance(a, str | int | float) for a in args):
        raise StartError("config.args must be a list of strings")
    return [command, *map(str, args)]


def _hostname(task: str) -> str:
    cleaned = "".join(c if c.isalnum() or c == "-" else "-" for c in task).strip("-")
    return (cleaned or "task")[:HOSTNAME_MAX]


def _hand_over(task_dir: Path, shared: Path, who: Identity) -> None:
    """The task's own directories become its user's; the group's shared data and tmp are
    writable by every task (Nomad makes them 0777)."""
    for name in TASK_DIRS:
        directory = task_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        os.chown(directory, who.uid, who.gid)
    for name in SHARED_WRITABLE:
        directory = shared / name
        directory.mkdir(parents=True, exist_ok=True)
        directory.chmod(0o1777 if name == "tmp" else 0o777)


def _launch(spec: dict[str, Any], task: TaskSpec, logs: Path) -> tuple[subprocess.Popen[bytes], int]:
    """Start the launcher and hear from it: the task's host pid, or why it did not start."""
    status_read, status_write = os.pipe()
    stdout, stderr = log_paths(task, logs)
    try:
        with open_log(stdout) as out, open_log(stderr) as err:
            process = subprocess.Popen(
                [sys.executable, "-I", "-S", launcher.__file__, str(status_write)],
                cwd="/",
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                stdin=subprocess.PIPE,
                stdout=out,
                stderr=err,
                pass_fds=(status_write,),
                start_new_session=True,  # outlives a client crash; never in the client's group
            )
        os.close(status_write)
        status_write = -1
        assert process.stdin is not None
        with process.stdin:
            process.stdin.write(json.dumps(spec).encode())
        answer = _read_status(status_read, process)
    except (OSError, ValueError) as error:
        raise StartError(str(error)) from error
    finally:
        os.close(status_read)
        if status_write >= 0:
            os.close(status_write)
    if "pid" not in answer:
        process.wait()
        raise StartError(f"failed to start the task: {answer.get('error') or 'the launcher gave no reason'}")
    return process, int(answer["pid"])


def _read_status(fd: int, process: subprocess.Popen[bytes]) -> dict[str, Any]:
    data = b""
    deadline = time.monotonic() + LAUNCH_TIMEOUT_S
    while True:
        left = deadline - time.monotonic()
        ready, _, _ = select.select([fd], [], [], max(0.0, left))
        if not ready:
            process.kill()
            return {"error": f"the launcher did not answer within {LAUNCH_TIMEOUT_S:g}s"}
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
    try:
        answer = json.loads(data) if data else {}
    except ValueError:
        return {"error": data.decode(errors="replace")}
    return answer if isinstance(answer, dict) else {}
