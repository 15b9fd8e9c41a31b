"""One allocation on this node: its directory, its task runners, its client status, and the
record on disk that lets a restarted client re-attach to it or clean it up."""

from __future__ import annotations

import contextlib
import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from workers.client.drivers import Driver, StartError, TaskSpec
from workers.client.health import HealthWatch
from workers.client.restarts import RestartPolicy, RestartTracker
from workers.client.task_runner import TaskRunner

NANOS = 1_000_000_000
TERMINAL = ("complete", "failed", "lost")
RECORD = "alloc.json"


def task_specs(alloc: dict[str, Any]) -> tuple[list[tuple[TaskSpec, dict[str, Any] | None]], bool]:
    """The group's tasks from the allocation's job, with their restart policies, and whether it is batch."""
    job = alloc.get("Job") or {}
    group = next((g for g in job.get("TaskGroups") or [] if g.get("Name") == alloc["TaskGroup"]), None)
    if group is None:
        raise StartError(f"task group {alloc['TaskGroup']!r} is not in job version {alloc.get('JobVersion')}")
    specs = []
    for task in group.get("Tasks") or []:
        spec = TaskSpec(
            name=str(task["Name"]),
            driver=str(task.get("Driver", "")),
            config=dict(task.get("Config") or {}),
            env={str(k): str(v) for k, v in (task.get("Env") or {}).items()},
            kill_timeout_s=float(task.get("KillTimeout", 5 * NANOS)) / NANOS,
        )
        specs.append((spec, task.get("RestartPolicy") or group.get("RestartPolicy")))
    return specs, job.get("Type") in ("batch", "sysbatch")


class AllocRunner:
    def __init__(
        self,
        alloc: dict[str, Any],
        alloc_dir: Path,
        drivers: dict[str, Driver],
        on_change: Callable[[AllocRunner], None],
        saved: dict[str, Any] | None = None,
    ) -> None:
        self.id = str(alloc["ID"])
        self.alloc, self.dir, self.on_change = alloc, alloc_dir, on_change
        saved = saved or {}
        self.client_status: str = saved.get("client_status", "pending")
        self.description: str = saved.get("description", "")
        self.finished_at: float | None = saved.get("finished_at")
        self.stopping = bool(saved.get("stopping", False))
        self.tasks: dict[str, TaskRunner] = {}
        # A restarted client keeps its health clock and verdict (the servers keep the first one).
        self.health = HealthWatch.restore(saved.get("health")) or HealthWatch.of(alloc)
        self._lock = threading.RLock()
        self._build(drivers, saved.get("tasks") or {})

    def _build(self, drivers: dict[str, Driver], saved: dict[str, Any]) -> None:
        logs = self.dir / "alloc" / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        try:
            specs, batch = task_specs(self.alloc)
        except StartError as err:
            self._terminal("failed", str(err))
            return
        for spec, policy in specs:
            driver = drivers.get(spec.driver)
            if driver is None:
                self._terminal("failed", f"driver {spec.driver!r} is not enabled on this node")
                return
            task_dir = self.dir / spec.name
            task_dir.mkdir(parents=True, exist_ok=True)
            tracker = RestartTracker(RestartPolicy.of(policy), batch)
            self.tasks[spec.name] = TaskRunner(
                spec, driver, tracker, task_dir, logs, self._changed, saved.get(spec.name)
            )

    @property
    def terminal(self) -> bool:
        return self.client_status in TERMINAL

    def start(self) -> None:
        if self.terminal:
            self.persist()
            self.on_change(self)
            return
        for task in self.tasks.values():
            task.start()
        if self.stopping:
            self.stop()
        self._changed()

    def stop(self) -> None:
        """The servers want it stopped (stop or evict): kill every task, honouring kill_timeout."""
        self.stopping = True
        for task in self.tasks.values():
            task.stop()
        if not any(t.thread.is_alive() for t in self.tasks.values()):
            self._changed()

    def _changed(self) -> None:
        with self._lock:
            states = [t.state for t in self.tasks.values()]
            status, description = self._derive(states)
            if not self.terminal:
                if status in TERMINAL:
                    self._terminal(status, description)
                else:
                    self.client_status, self.description = status, description
            failed_task = any(s["State"] == "dead" and s["Failed"] for s in states)
            self.persist()
        if failed_task and not self.stopping:
            # A failed task fails its allocation: its siblings are stopped (Nomad does the same).
            for task in self.tasks.values():
                task.stop()
        self.on_change(self)

    def _derive(self, states: list[dict[str, Any]]) -> tuple[str, str]:
        if states and all(s["State"] == "dead" for s in states):
            if any(s["Failed"] for s in states):
                return "failed", "Failed tasks"
            return "complete", "All tasks have completed"
        if any(s["State"] == "running" for s in states):
            return "running", "Tasks are running"
        return "pending", "No tasks have started"

    def _terminal(self, status: str, description: str) -> None:
        self.client_status, self.description = status, description
        self.finished_at = time.time()

    def update(self) -> dict[str, Any]:
        """The allocation's status as the servers want it (Nomad's client alloc update)."""
        with self._lock:
            body: dict[str, Any] = {
                "ID": self.id,
                "ClientStatus": self.client_status,
                "ClientDescription": self.description,
                "TaskStates": {name: t.state for name, t in self.tasks.items()},
            }
            health = self.health.report() if self.health else None
            if health is not None:
                body["DeploymentStatus"] = health
            return body

    def judge_health(self, now: float) -> bool:
        """Whether the allocation's deployment health was decided just now."""
        if self.health is None or self.stopping:
            return False
        with self._lock:
            states = [t.state for t in self.tasks.values()]
            decided = self.health.judge(self.client_status, states, now)
        if decided:
            self.persist()
        return decided

    def join_deployment(self, alloc: dict[str, Any]) -> None:
        """An in-place update moved the allocation into a new deployment: judge it again."""
        with self._lock:
            self.alloc = alloc
            self.health = HealthWatch.of(alloc)
        self.persist()

    def persist(self) -> None:
        with self._lock:
            record = {
                "alloc": self.alloc,
                "client_status": self.client_status,
                "description": self.description,
                "finished_at": self.finished_at,
                "stopping": self.stopping,
                "tasks": {name: t.saved() for name, t in self.tasks.items()},
                "health": self.health.saved() if self.health else None,
            }
            path = self.dir / RECORD
            temporary = path.with_suffix(".tmp")
            temporary.write_text(json.dumps(record))
            temporary.replace(path)  # atomic: a crash leaves the old record or the new one

    def destroy(self) -> None:
        """Kill whatever still runs, wait for the task runners, remove the directory."""
        self.stop()
        for task in self.tasks.values():
            if task.thread.is_alive():
                task.thread.join()
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.dir)

    @classmethod
    def restore(
        cls, alloc_dir: Path, drivers: dict[str, Driver], on_change: Callable[[AllocRunner], None]
    ) -> AllocRunner | None:
        try:
            record = json.loads((alloc_dir / RECORD).read_text())
            return cls(record["alloc"], alloc_dir, drivers, on_change, record)
        except (OSError, ValueError, KeyError):
            return None
