"""The template manager's hold on its task: the task runner's restart, signal, event and
fail paths, and change scripts run in the task's context."""

from __future__ import annotations

from client.drivers import StartError, signal_number
from client.tasks.task_commands import CommandFailed, TaskContext, run_in_task
from client.tasks.task_runner import TaskRunner
from client.templating.manager import ScriptError
from client.templating.spec import ChangeScript


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
        """The script in the task's context, as a script check runs (client.tasks.task_commands)."""
        task = self._task()
        context = TaskContext(task.spec.driver, task.task_dir, dict(task.spec.env), task.spec.user, task.handle)
        try:
            done = run_in_task(context, [script.command, *script.args], script.timeout_s)
        except CommandFailed as err:
            raise ScriptError(str(err)) from None
        if done.timed_out:
            raise ScriptError(f"timed out after {script.timeout_s:g}s")
        return done.exit_code

    def event(self, kind: str, message: str) -> None:
        self._task().add_event(kind, message)

    def fail(self, message: str) -> None:
        self._task().fail(message)
