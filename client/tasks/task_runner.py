"""One task of an allocation: start it through its driver, wait, and restart it per its
restart policy; Nomad-shaped TaskState for the servers."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import structlog

from client.drivers import KILLED, Driver, Handle, StartError, TaskSpec, oom_killed
from client.logs import logmon_control
from client.tasks import task_state
from client.tasks.artifacts import ArtifactError, TaskArtifacts
from client.tasks.restarts import RestartTracker
from client.templating.manager import TemplateFailed, TemplateManager

log = structlog.get_logger(__name__)
NANOS = 1_000_000_000
WAIT_SLICE_S = 0.25  # also how soon a stop is noticed
MAX_EVENTS = 10
OOM_MESSAGE = "OOM Killed"  # Nomad's exit message for a task the OOM killer ended


def now_ns() -> int:
    return time.time_ns()


def _open_gate() -> threading.Event:
    gate = threading.Event()
    gate.set()
    return gate


class NotRunning(Exception):
    """A restart or signal for a task with no running process (Nomad's ErrTaskNotRunning)."""


class TaskRunner:
    def __init__(
        self,
        spec: TaskSpec,
        driver: Driver,
        tracker: RestartTracker,
        task_dir: Path,
        logs: Path,
        on_change: Callable[[], None],
        saved: dict[str, Any] | None = None,
        gate: threading.Event | None = None,
        templates: TemplateManager | None = None,
        artifacts: TaskArtifacts | None = None,
    ) -> None:
        self.spec, self.driver, self.tracker = spec, driver, tracker
        self.base_env = dict(spec.env)  # the env templates add to at each start
        # Nomad's template hook: rendered once before the first start, then kept up to date.
        self.templates = templates
        self._prestarted = False
        self._fail_message: str | None = None  # set when the task is killed as failed
        self.task_dir, self.logs, self.on_change = task_dir, logs, on_change
        # Open while the task's lifecycle stage may start (the allocation's coordinator sets it).
        self.gate = gate if gate is not None else _open_gate()
        saved = saved or {}
        found = saved.get("state")
        self.state: dict[str, Any] = task_state.upgraded(found) if found else task_state.new_state()
        self._saved_handle: dict[str, Any] | None = saved.get("handle")
        self.artifacts = artifacts
        # Fetched once per allocation, as Nomad's hook state records (not again on a restart).
        self._artifacts_done = bool(saved.get("artifacts_done"))
        self.handle: Handle | None = None
        self._stop = threading.Event()
        self._restart = threading.Event()  # a user (or a template) asked for a restart in place
        self._restart_reason = ""
        self._skip_delay = False
        self._lock = threading.Lock()
        self.thread = threading.Thread(target=self._run, name=f"task-{spec.name}", daemon=True)

    @property
    def dead(self) -> bool:
        return bool(self.state["State"] == "dead")

    def saved(self) -> dict[str, Any]:
        with self._lock:
            handle = self.handle.state() if self.handle is not None else None
            return {"state": self.state, "handle": handle, "artifacts_done": self._artifacts_done}

    def start(self) -> None:
        if not self.dead:
            self.thread.start()
        elif self.spec.logs is not None:
            # The client may have gone down between the task's end and its logmon's.
            logmon_control.stop(self.logs, self.spec.name)

    def stop(self, event: tuple[str, str] | None = None, skip_delay: bool = False) -> None:
        """Kill the task (or keep it from starting); `event` says why (a sibling failed …);
        skip_delay: kill without waiting out the task's shutdown_delay."""
        if event is not None and not self._stop.is_set() and not self.dead:
            with self._lock:
                self._event(*event)
        self._skip_delay = self._skip_delay or skip_delay
        self._stop.set()
        if self.templates is not None:
            self.templates.stop()  # a task being stopped needs no more renders (nor a waiting prestart)

    def restart(self, reason: str) -> None:
        """Kill the running task and start it again at once, outside its restart policy
        (Nomad's alloc restart: a 'Restart Signaled' event, and Restarts counts it)."""
        with self._lock:
            if self.handle is None or self.state["State"] != "running" or self._stop.is_set():
                raise NotRunning(f"task {self.spec.name!r} is not running")
            self._event("Restart Signaled", reason, RestartReason=reason)
            self._restart_reason = reason
            self._restart.set()
        self.on_change()

    def rerun(self, reason: str) -> None:
        """Make a dead task ready to run again (Nomad's ForceRestart of a task whose run has
        ended, for `alloc restart -all-tasks`): the same events and Restarts count as a restart
        in place, pending again; `start()` then runs it once its lifecycle gate opens. The
        caller reports the change. Raises NotRunning when it is not dead or is being stopped."""
        with self._lock:
            if not self.dead or self._stop.is_set() or self.thread.is_alive():
                raise NotRunning(f"task {self.spec.name!r} is not dead")
            self._event("Restart Signaled", reason, RestartReason=reason)
            self._event("Restarting", "Task restarting in 0s", RestartReason=reason)
            restarts = self.state["Restarts"] + 1
            self.state = {**self.state, "State": "pending", "Failed": False, "Restarts": restarts}
            self.state["LastRestart"] = task_state.now()
            self._fail_message = None
            self.thread = threading.Thread(target=self._run, name=f"task-{self.spec.name}", daemon=True)

    def signal(self, name: str, signum: int, message: str = "") -> None:
        """Deliver a signal to the running task (Nomad's alloc signal: a 'Signaling' event)."""
        with self._lock:
            if self.handle is None or self.state["State"] != "running":
                raise NotRunning(f"task {self.spec.name!r} is not running")
            self.handle.signal(signum)
            self._event("Signaling", message or f"Task being sent signal {name}", TaskSignal=name)
        self.on_change()

    def add_event(self, kind: str, message: str) -> None:
        with self._lock:
            self._event(kind, message)
        self.on_change()

    def fail(self, message: str) -> None:
        """Kill the task and mark it failed (Nomad's Kill with FailsTask): a template that can
        no longer render, a change script that failed with fail_on_error."""
        with self._lock:
            if self._stop.is_set() or self.dead:
                return
            self._fail_message = message
            self._event("Killing", message, FailsTask=True)
        self._stop.set()
        self.on_change()

    def pids(self) -> list[int]:
        with self._lock:
            return self.handle.pids() if self.handle is not None else []

    def _event(self, kind: str, message: str = "", **extra: Any) -> None:
        event = {"Type": kind, "Time": now_ns(), "DisplayMessage": message, **extra}
        self.state["Events"] = [*self.state["Events"], event][-MAX_EVENTS:]

    def _set(self, **fields: Any) -> None:
        with self._lock:
            self.state = {**self.state, **fields}
        self.on_change()

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as err:  # a bug must still leave the task dead and reported
            log.exception("task runner failed", task=self.spec.name)
            self._event("Task Setup Failure", str(err))
            self._set(State="dead", Failed=True, FinishedAt=task_state.now())

    def _loop(self) -> None:
        handle = self._reattach()
        while True:
            if handle is None:
                if not self._wait_gate() or self._stop.is_set() or not self._prestart():
                    if self._fail_message is not None:
                        return self._finish(failed=True, message="")
                    return self._finish(failed=False, message="Task stopped before it started")
                handle = self._start()
                if handle is None:
                    code, start_failed = KILLED, True
                else:
                    code, start_failed = self._wait(handle), False
            else:
                code, start_failed = self._wait(handle), False
            oom = handle is not None and oom_killed(handle)
            with self._lock:
                self.handle = None
            handle = None
            if self._stop.is_set() and not oom:
                self._event("Killed", "Task successfully killed", ExitCode=code)
                return self._finish(failed=self._fail_message is not None, message="")
            if not start_failed:  # an artifact that failed to download ran nothing
                self._terminated(code, oom)
            if self._stop.is_set():
                return self._finish(failed=self._fail_message is not None, message="")
            if self._restart.is_set():
                self._restart.clear()
                reason = self._restart_reason or "User requested restart"
                self._event("Restarting", "Task restarting in 0s", RestartReason=reason)
                # Pending while it waits for its lifecycle gate (`-all-tasks` reruns prestart first).
                waits = {} if self.gate.is_set() else {"State": "pending"}
                self._set(Restarts=self.state["Restarts"] + 1, LastRestart=task_state.now(), **waits)
                continue
            decision = self.tracker.after_exit(time.time(), code, start_failed)
            if decision.action == "complete":
                return self._finish(failed=False, message=decision.reason)
            if decision.action == "fail":
                self._event("Not Restarting", decision.reason)
                return self._finish(failed=True, message=decision.reason)
            self._event("Restarting", f"Task restarting in {decision.delay_s:g}s", RestartReason=decision.reason)
            self._set(State="pending")
            if self._stop.wait(decision.delay_s):
                return self._finish(failed=False, message="")
            self._set(Restarts=self.state["Restarts"] + 1, LastRestart=task_state.now())

    def _terminated(self, code: int, oom: bool) -> None:
        """Nomad's Terminated event; an OOM kill says so as Nomad's does (its exit message
        "OOM Killed" and the oom_killed detail)."""
        if not oom:
            self._event("Terminated", f"Exit Code: {code}", ExitCode=code)
            return
        details = {"exit_code": str(code), "oom_killed": "true", "exit_message": OOM_MESSAGE}
        message = f'Exit Code: {code}, Exit Message: "{OOM_MESSAGE}"'
        self._event("Terminated", message, ExitCode=code, Message=OOM_MESSAGE, Details=details)

    def _wait_gate(self) -> bool:
        """Wait until the task's lifecycle stage may start; False if it was stopped first."""
        while not self.gate.wait(WAIT_SLICE_S):
            if self._stop.is_set():
                return False
        return True

    def _prestart(self) -> bool:
        """Render the templates before the first start (not again on restarts); False when the
        task was stopped meanwhile or a template failed (the task then fails)."""
        if self.templates is None or self._prestarted:
            return True
        try:
            ready = self.templates.prestart(self._stop)
        except TemplateFailed as err:
            self.fail(f"Template failed: {err}")
            return False
        self._prestarted = ready
        return ready

    def _reattach(self) -> Handle | None:
        if self._saved_handle is None or self.state["State"] != "running":
            return None
        handle = self.driver.reattach(self.spec, self.task_dir, self._saved_handle)
        if handle is not None and self.spec.logs is not None:
            try:
                logmon_control.ensure(self.logs, self.spec.name, self.spec.logs)  # still running, as a rule
            except StartError:
                log.warning("logmon did not restart; the task's output is lost", task=self.spec.name)
        with self._lock:
            self.handle = handle
        if handle is not None and self.templates is not None:
            self._prestarted = True
            self.templates.attach()
        return handle

    def _start(self) -> Handle | None:
        log.debug("task starting", alloc_id=self.spec.alloc_id, task=self.spec.name)
        if not self._fetch_artifacts():
            return None
        if self.templates is not None:
            # Template variables override the task's env block, as in Nomad's env builder.
            self.spec = replace(self.spec, env={**self.base_env, **self.templates.env()})
        logmon = None if self.spec.logs is None else logmon_control.launch(self.logs, self.spec.name, self.spec.logs)
        try:  # logmon comes up while the driver starts the task (drivers.open_log)
            handle = self.driver.start(self.spec, self.task_dir, self.logs)
        except StartError as err:
            if logmon is not None:
                logmon.abandon()
            self._event("Driver Failure", str(err))
            self.on_change()
            return None
        log.debug("task driver started", alloc_id=self.spec.alloc_id, task=self.spec.name)
        if logmon is not None and not self._logmon_up(logmon, handle):
            return None
        with self._lock:
            self.handle = handle
        self._event("Started", "Task started by client")
        started = self.state["StartedAt"] if task_state.started(self.state) else task_state.now()
        log.debug("task running", alloc_id=self.spec.alloc_id, task=self.spec.name)
        self._set(State="running", StartedAt=started)
        return handle

    def _logmon_up(self, logmon: logmon_control.Launch, handle: Handle) -> bool:
        """Wait for a logmon that came up while the task started (drivers.open_log); if it
        never does, the task is killed and the start failed, as if logmon had come first."""
        try:
            logmon.wait()
        except StartError as err:
            handle.kill(0, "SIGKILL")
            self._event("Driver Failure", str(err))
            self.on_change()
            return False
        return True

    def _fetch_artifacts(self) -> bool:
        """Nomad's artifact hook: False (a failed start, restarted per the policy) when one failed."""
        if self.artifacts is None or not self.artifacts.artifacts or self._artifacts_done:
            return True
        self._event("Downloading Artifacts", "Client is downloading artifacts")
        self.on_change()
        try:
            self.artifacts.fetch_all()
        except ArtifactError as err:
            self._event("Failed Artifact Download", str(err), DownloadError=str(err))
            self.on_change()
            return False
        self._artifacts_done = True
        return True

    def _wait(self, handle: Handle) -> int:
        while not self._stop.is_set() and not self._restart.is_set():
            code = handle.wait(WAIT_SLICE_S)
            if code is not None:
                return code
        if self._stop.is_set() and self.spec.shutdown_delay_s > 0:
            code = self._shutdown_delay(handle)
            if code is not None:
                return code
        timeout, name = self.spec.kill_timeout_s, self.spec.kill_signal
        message = f"Sent {name}. Waiting {timeout:g}s before force killing"
        self._event("Killing", message, KillTimeout=int(timeout * NANOS), KillSignal=name)
        self.on_change()
        return handle.kill(timeout, name)

    def _shutdown_delay(self, handle: Handle) -> int | None:
        """Nomad's task shutdown_delay before the kill signal; the exit code if the task ended
        meanwhile. Skipped (with its event) when the stop says no_shutdown_delay."""
        delay = self.spec.shutdown_delay_s
        if self._skip_delay:
            self._event("Skipping shutdown delay", f"Skipping shutdown_delay of {delay:g}s before killing the task.")
            self.on_change()
            return None
        self._event("Waiting for shutdown delay", f"Waiting for shutdown_delay of {delay:g}s before killing the task.")
        self.on_change()
        deadline = time.monotonic() + delay
        while (left := deadline - time.monotonic()) > 0 and not self._skip_delay:
            code = handle.wait(min(WAIT_SLICE_S, left))
            if code is not None:
                return code
        return None

    def _finish(self, *, failed: bool, message: str) -> None:
        if self.templates is not None:
            self.templates.stop()
        if self.spec.logs is not None:
            logmon_control.stop(self.logs, self.spec.name)  # after it drained the task's last words
        if message:
            self._event("Finished" if not failed else "Failed", message)
        self._set(State="dead", Failed=failed, FinishedAt=task_state.now())
