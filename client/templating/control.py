"""The template manager's hold on its task: the task runner's restart, signal, event and
fail paths, and change scripts run in the task's context."""

from __future__ import annotations

import subprocess

from client.drivers import StartError, signal_number
from client.task_runner import TaskRunner
from client.templating.manager import ScriptError
from client.templating.spec import ChangeScript

# Drivers whose task context is the client's own (a command runs as alloc exec runs it).
HOST_CONTEXT_DRIVERS = frozenset({"raw_exec"})


class RunnerControl:
    def __init__(self) -> None:
        self.runner: TaskRunner | None = None  # bound once the runner exists (it holds the manager)

    def _task(self) -> TaskRunner:
        if self.runner is None:
            raise RuntimeError("template control used before its task runner was bound")
        return self.runner

    def restart(self, reason: str) -> None:
        self._task().restart(reason)

    def signal(self, name: str, message: str) -> None:
        try:
            signum = signal_number(name)
        except StartError as err:
            raise ValueError(str(err)) from None
        self._task().signal(name, signum, message)

    def run_script(self, script: ChangeScript) -> int:
        task = self._task()
        if task.spec.driver not in HOST_CONTEXT_DRIVERS:
            raise ScriptError(f"the {task.spec.driver} driver does not support the exec operation")
        try:
            done = subprocess.run(
                [script.command, *script.args],
                cwd=task.task_dir,
                env=dict(task.spec.env),
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=script.timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise ScriptError(f"timed out after {script.timeout_s:g}s") from None
        except (OSError, ValueError) as err:
            raise ScriptError(str(err)) from None
        return done.returncode

    def event(self, kind: str, message: str) -> None:
        self._task().add_event(kind, message)

    def fail(self, message: str) -> None:
        self._task().fail(message)
