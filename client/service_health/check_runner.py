"""Nomad service checks, the I/O part: the probes (http, tcp, and script run inside the task)
and the watcher that runs an allocation's checks at their intervals, keeps their results and
applies `check_restart`. One thread per check; a probe never outlives its timeout."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable

import httpx
import structlog

from client.service_health.checks import CheckSpec, CheckState, Probe, RestartCounter, all_passing
from client.tasks.task_commands import CommandFailed, TaskContext, run_in_task

log = structlog.get_logger(__name__)


def probe_http(spec: CheckSpec) -> Probe:
    host = f"[{spec.address}]" if ":" in spec.address else spec.address
    path = spec.path if spec.path.startswith("/") else f"/{spec.path}"
    url = f"{spec.protocol}://{host}:{spec.port}{path}"
    headers = httpx.Headers(list(spec.headers))
    try:
        # Go's client (Nomad's) follows redirects. The certificate is not verified: a task's own
        # is rarely one a CA vouches for, and the check only asks whether it answers.
        with httpx.Client(timeout=spec.timeout_s, verify=False, follow_redirects=True) as http:
            reply = http.request(spec.method, url, headers=headers)
    except httpx.HTTPError as err:
        return Probe(False, f"nomad: {err}")
    if reply.status_code == 200:
        return Probe(True, "nomad: http ok", 200)  # as Nomad's: the body of a success is not kept
    return Probe(reply.status_code < 400, reply.text, reply.status_code)


def probe_tcp(spec: CheckSpec) -> Probe:
    try:
        with socket.create_connection((spec.address, spec.port), timeout=spec.timeout_s):
            return Probe(True, "nomad: tcp ok")
    except OSError as err:
        return Probe(False, f"nomad: {err}")


def probe_script(spec: CheckSpec, context: TaskContext | None) -> Probe:
    """The command in the task's context (client.tasks.task_commands: raw_exec's directory and
    environment, exec's namespaces, docker's container), as `alloc exec` runs it; exit 0 passes."""
    if context is None:
        return Probe(False, f"nomad: task {spec.task!r} is not running")
    try:
        done = run_in_task(context, [spec.command, *spec.args], spec.timeout_s)
    except CommandFailed as err:
        return Probe(False, f"nomad: {err}")
    if done.timed_out:
        return Probe(False, f"nomad: script check timed out after {spec.timeout_s:g}s")
    return Probe(done.exit_code == 0, done.output)


def run_probe(spec: CheckSpec, context: Callable[[str], TaskContext | None]) -> Probe:
    if spec.kind == "http":
        return probe_http(spec)
    if spec.kind == "tcp":
        return probe_tcp(spec)
    if spec.kind == "script":
        return probe_script(spec, context(spec.task))
    return Probe(False, f"nomad: unknown check type {spec.kind!r}")


class CheckWatch:
    """An allocation's checks. `restart(task, reason)` is the task runner's restart path
    ("" for every task, for a group service's check)."""

    def __init__(
        self,
        specs: list[CheckSpec],
        context: Callable[[str], TaskContext | None],
        restart: Callable[[str, str], None],
        on_change: Callable[[], None],
    ) -> None:
        self.states = {spec.id: CheckState(spec) for spec in specs}
        self.counters = {spec.id: RestartCounter(spec.restart_limit, spec.restart_grace_s) for spec in specs}
        self._context, self._restart, self._on_change = context, restart, on_change
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._loop, args=(spec,), name=f"check-{spec.id[:8]}", daemon=True)
            for spec in specs
        ]

    def start(self) -> None:
        now = time.time()
        for counter in self.counters.values():
            counter.started(now)
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()

    def results(self) -> dict[str, dict[str, object]]:
        with self._lock:
            return {check_id: state.result() for check_id, state in self.states.items()}

    def passing(self) -> tuple[bool, float]:
        with self._lock:
            return all_passing(list(self.states.values()))

    def task_started(self, task: str, now: float) -> None:
        """A task (re)started: its checks' restart counters begin a new grace."""
        with self._lock:
            for check_id, counter in self.counters.items():
                if self.states[check_id].spec.task in (task, ""):
                    counter.started(now)

    def _loop(self, spec: CheckSpec) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self._once(spec)
            except Exception:  # a bug in one probe must not end the check, nor the client
                log.exception("service check failed to run", check=spec.name)
            self._stop.wait(max(0.0, spec.interval_s - (time.monotonic() - started)))

    def _once(self, spec: CheckSpec) -> None:
        probe = run_probe(spec, self._context)
        if self._stop.is_set():
            return
        now = time.time()
        with self._lock:
            state = self.states[spec.id]
            before = state.status
            status = state.observe(probe, now)
            restart = self.counters[spec.id].observe(status, now)
        if restart:
            reason = f"healthcheck: check {spec.name!r} unhealthy"
            log.info("check_restart: restarting task", check=spec.name, task=spec.task or "(all)")
            try:
                self._restart(spec.task, reason)
            except Exception as err:  # the task may be dead or stopping meanwhile
                log.info("check_restart: restart refused", check=spec.name, error=str(err))
        if status != before:
            self._on_change()
