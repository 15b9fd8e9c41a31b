"""A task's templates (Nomad's TaskTemplateManager): render them all once before the task
starts, then re-render whenever a dependency's watcher reports a change (after the
template's wait, if any) and apply the change modes of those whose output changed:
restart wins over signals and scripts; splay delays the action by a random part of it."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import structlog

from client.template import MissingDependency, Template, TemplateError
from client.templating import files
from client.templating.envfile import EnvFileError, parse_env
from client.templating.http_source import DEFAULT_WAIT_S
from client.templating.source import Dependency, Source, SourceError
from client.templating.spec import ChangeScript, TemplateSpec
from client.templating.watch import RETRY_BASE_S, RETRY_MAX_S, Cache

log = structlog.get_logger(__name__)
RESTART_MESSAGE = "Template with change_mode restart re-rendered"
SIGNAL_MESSAGE = "Template re-rendered"
TEMPLATE_EVENT = "Template"  # Nomad's event type for "Missing: ..." while the first render waits
HOOK_MESSAGE, HOOK_FAILED = "Task hook message", "Task hook failed"


class TemplateFailed(Exception):
    """A template that cannot render (bad syntax, unreadable source, bad env file): the task fails."""


class ScriptError(Exception):
    """A change_script that could not run (no such command, timed out, driver cannot exec)."""


class TaskControl(Protocol):
    """What the manager does to its task (the task runner implements it)."""

    def restart(self, reason: str) -> None:
        """Restart the running task (NotRunning, or any error, when it does not run)."""

    def signal(self, name: str, message: str) -> None: ...

    def run_script(self, script: ChangeScript) -> int:
        """Run the script in the task's context; its exit code, or ScriptError."""

    def event(self, kind: str, message: str) -> None: ...

    def fail(self, message: str) -> None:
        """Kill the task and mark it failed (Nomad's Kill with FailsTask)."""


@dataclass
class _Entry:
    spec: TemplateSpec
    path: Path
    template: Template | None = None
    deps: set[Dependency] = field(default_factory=set)
    rendered: bool = False
    first_change: float | None = None
    last_change: float | None = None

    def due(self, now: float) -> float | None:
        """When a pending change may be rendered (Nomad's wait: min quiet time, max delay)."""
        if self.first_change is None or self.last_change is None:
            return None
        quiet = self.last_change + (self.spec.wait_min_s or 0.0)
        if self.spec.wait_max_s:
            return min(quiet, self.first_change + self.spec.wait_max_s)
        return quiet


class TemplateManager:
    def __init__(
        self,
        specs: Iterable[TemplateSpec],
        task_dir: Path,
        env: Mapping[str, str],
        source: Source,
        control: TaskControl,
        *,
        wait_s: float = DEFAULT_WAIT_S,
        splay: Callable[[float], float] = lambda most: random.uniform(0, most),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.task_dir, self.task_env, self.control = task_dir, dict(env), control
        self.splay, self.clock = splay, clock
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._changed: set[Dependency] = set()
        self._lock = threading.Lock()
        self.cache = Cache(source, self._on_change, self._stop, wait_s)
        self.entries = [_Entry(spec, task_dir) for spec in specs]
        self._env: dict[str, str] = {}
        self._thread: threading.Thread | None = None
        self.renders = 0  # re-renders that changed a file (for tests and benchmarks)
        self.rendered = threading.Condition()

    # --- the hook the task runner calls -------------------------------------------------
    def prestart(self, stopped: threading.Event) -> bool:
        """Render every template once, waiting for missing data; False if the task was stopped
        first. Raises TemplateFailed. Starts watching for changes afterwards."""
        if not self._first_render(stopped, running=False):
            return False
        self._start_loop()
        return True

    def attach(self) -> None:
        """A restarted client re-attached to the running task: render in the background and
        apply the change modes of what changed meanwhile (Nomad does the same)."""
        threading.Thread(target=self._attach, name="tmpl-attach", daemon=True).start()

    def env(self) -> dict[str, str]:
        """The variables of the env templates, for the task's next start."""
        with self._lock:
            return dict(self._env)

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()

    # --- rendering ----------------------------------------------------------------------
    def _attach(self) -> None:
        try:
            self._first_render(self._stop, running=True)
        except TemplateFailed as err:
            self.control.fail(f"Template failed: {err}")
            return
        self._start_loop()

    def _first_render(self, stopped: threading.Event, *, running: bool) -> bool:
        self._parse()
        reported: frozenset[str] = frozenset()
        delay = RETRY_BASE_S
        while not (stopped.is_set() or self._stop.is_set()):
            self._wake.clear()
            try:
                changed, missing = self._render(self.entries)
            except SourceError as err:
                log.warning("template data unavailable", error=str(err))
                self._pause(stopped, delay)
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            if not missing:
                self._load_env()
                if running and changed:
                    self._act(changed)
                return True
            if missing != reported:
                reported = missing
                self.control.event(TEMPLATE_EVENT, "Missing: " + ", ".join(sorted(missing)))
            self._pause(stopped, None)  # until a watcher reports a change
        return False

    def _pause(self, stopped: threading.Event, delay: float | None) -> None:
        """Sleep until a change, the delay, or a stop (the outer stop is looked at each second)."""
        deadline = None if delay is None else time.monotonic() + delay
        while not (stopped.is_set() or self._stop.is_set()):
            left = 1.0 if deadline is None else min(1.0, deadline - time.monotonic())
            if left <= 0 or self._wake.wait(left):
                return

    def _parse(self) -> None:
        for entry in self.entries:
            spec = entry.spec
            try:
                entry.path = files.inside(self.task_dir, spec.dest_path, "destination")
                text = spec.embedded
                if spec.source_path:
                    text = files.inside(self.task_dir, spec.source_path, "source").read_text()
                entry.template = Template.parse(spec.dest_path, text, spec.left, spec.right)
            except (TemplateError, files.PathEscapes, OSError, UnicodeDecodeError) as err:
                raise TemplateFailed(str(err)) from None

    def _render(self, entries: Iterable[_Entry]) -> tuple[list[_Entry], frozenset[str]]:
        """Render and write each; the entries whose file changed and the dependencies missing."""
        changed: list[_Entry] = []
        missing: set[str] = set()
        for entry in entries:
            assert entry.template is not None
            self.cache.touched = set()
            try:
                text = entry.template.render(self.cache, self.task_env, missing_key_error=entry.spec.err_missing_key)
            except MissingDependency as gap:
                missing.add(gap.dependency)
                entry.deps = set(self.cache.touched)
                continue
            except TemplateError as err:
                raise TemplateFailed(str(err)) from None
            entry.deps = set(self.cache.touched)
            entry.rendered = True
            if files.current(entry.path) != text:
                try:
                    files.write(entry.path, text, entry.spec.perms, entry.spec.uid, entry.spec.gid)
                except OSError as err:
                    raise TemplateFailed(f"writing {entry.spec.dest_path}: {err}") from None
                changed.append(entry)
        return changed, frozenset(missing)

    def _load_env(self) -> None:
        env: dict[str, str] = {}
        for entry in self.entries:
            if entry.spec.env and entry.rendered:
                try:
                    env.update(parse_env(entry.path.read_text()))
                except (EnvFileError, OSError) as err:
                    raise TemplateFailed(f"failed to read environment variables: {err}") from None
        with self._lock:
            self._env = env

    # --- re-rendering ---------------------------------------------------------------------
    def _on_change(self, dependency: Dependency) -> None:
        with self._lock:
            self._changed.add(dependency)
        self._wake.set()

    def _start_loop(self) -> None:
        if self._thread is None and not self._stop.is_set():
            self._thread = threading.Thread(target=self._loop, name="tmpl-render", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        try:
            while not self._stop.is_set():
                self._wait_for_work()
                if self._stop.is_set():
                    return
                self._step()
        except TemplateFailed as err:
            self.control.fail(f"Template failed: {err}")
        except Exception as err:  # nothing a template does may end the client: fail the task
            log.exception("template manager failed")
            self.control.fail(f"Template failed: {err}")

    def _wait_for_work(self) -> None:
        dues = [due for entry in self.entries if (due := entry.due(self.clock())) is not None]
        timeout = None if not dues else max(0.0, min(dues) - self.clock())
        self._wake.wait(timeout)
        self._wake.clear()

    def _step(self) -> None:
        now = self.clock()
        with self._lock:
            changed_deps, self._changed = self._changed, set()
        for entry in self.entries:
            if entry.deps & changed_deps:
                entry.first_change = entry.first_change if entry.first_change is not None else now
                entry.last_change = now
        due = [entry for entry in self.entries if (when := entry.due(now)) is not None and when <= now]
        if not due:
            return
        for entry in due:
            entry.first_change = entry.last_change = None
        try:
            changed, _ = self._render(due)
        except SourceError as err:  # a new dependency could not be read: try again on the next change
            log.warning("template data unavailable", error=str(err))
            return
        if not changed:
            return
        if any(entry.spec.env for entry in changed):
            self._load_env()
        with self.rendered:
            self.renders += 1
            self.rendered.notify_all()
        self._act(changed)

    def _act(self, changed: list[_Entry]) -> None:
        acting = [entry.spec for entry in changed if entry.spec.change_mode != "noop"]
        if not acting:
            return
        most = max(spec.splay_s for spec in acting)
        if most > 0 and self._stop.wait(self.splay(most)):
            return
        if any(spec.change_mode == "restart" for spec in acting):
            try:
                self.control.restart(RESTART_MESSAGE)
            except Exception as err:  # not running (between restarts): the next start has the new files
                log.info("template restart skipped", reason=str(err))
            return
        signals = sorted({spec.change_signal for spec in acting if spec.change_mode == "signal"})
        for name in signals:
            try:
                self.control.signal(name, SIGNAL_MESSAGE)
            except Exception as err:
                self.control.fail(f"Template failed to send signals {signals}: {err}")
                return
        for spec in acting:
            if spec.change_mode == "script" and spec.change_script is not None:
                self._script(spec.change_script)

    def _script(self, script: ChangeScript) -> None:
        try:
            code = self.control.run_script(script)
        except ScriptError as err:
            self._script_failed(script, f"Template failed to run script {script.command} on change: {err}")
            return
        if code == 0:
            self.control.event(
                HOOK_MESSAGE, f"Template successfully ran script from {script.command} with exit code: 0"
            )
            return
        arguments = list(script.args)
        message = (
            f"Template ran script {script.command} with arguments {arguments} on change but it exited with code: {code}"
        )
        self._script_failed(script, message)

    def _script_failed(self, script: ChangeScript, message: str) -> None:
        if script.fail_on_error:
            self.control.fail(message)
        else:
            self.control.event(HOOK_FAILED, message)
