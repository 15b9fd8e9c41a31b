"""One allocation on this node: its directory, its task runners, its client status, and the
record on disk that lets a restarted client re-attach to it or clean it up."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import structlog

from app.wire.allocation import TaskStateJson
from app.wire.api.api_nodes import AllocUpdateJson
from client.allocs.task_plans import TaskPlan, group_shutdown_delay_s, group_tasks, health_states, task_plans
from client.drivers import (
    Driver,
    NetworkManager,
    StartError,
)
from client.network.bridge import BridgeConfig, NetworkError, netns_path
from client.network.bridge import isolate as isolate_network
from client.network.bridge import setup as setup_network
from client.network.bridge import teardown as teardown_network
from client.service_health.check_runner import CheckWatch
from client.service_health.checks import CheckSpec, spec_of
from client.service_health.health import HealthWatch
from client.service_health.services import nomad_services, port_of, registrations
from client.tasks.artifacts import Fetcher, TaskArtifacts
from client.tasks.identities import DEFAULT as DEFAULT_IDENTITY
from client.tasks.identities import task_files
from client.tasks.lifecycle import (
    OPEN,
    POSTSTOP,
    advance,
    kill_order,
    kill_reason,
    restarts_on_success,
)
from client.tasks.restarts import RestartPolicy, RestartTracker
from client.tasks.task_commands import TaskContext
from client.tasks.task_runner import NotRunning, TaskRunner
from client.tasks.taskenv import (
    NodeInfo,
    TaskPaths,
    dispatch_payload,
    payload_path,
)
from client.templating.control import RunnerControl
from client.templating.manager import TemplateManager
from client.templating.source import Source
from client.templating.unavailable import NoSource

log = structlog.get_logger(__name__)

# Where an allocation's templates read variables and services (the agent's HTTP source).
# (the allocation, the task's workload identity or "") -> where its templates read data
SourceFactory = Callable[[dict[str, Any], str], Source]

NANOS = 1_000_000_000
TERMINAL = ("complete", "failed", "lost")
RECORD = "alloc.json"
SHARED_DIRS = ("data", "logs", "tmp")  # alloc/…, shared by the group's tasks (Nomad's layout)


class AllocRunner:
    def __init__(
        self,
        alloc: dict[str, Any],
        alloc_dir: Path,
        drivers: dict[str, Driver],
        on_change: Callable[[AllocRunner], None],
        saved: dict[str, Any] | None = None,
        node: dict[str, Any] | None = None,
        template_source: SourceFactory | None = None,
        identities: dict[str, dict[str, str]] | None = None,
        identity_error: str = "",
        artifact_roots: tuple[Path, ...] = (),
        bridge: BridgeConfig | None = None,
    ) -> None:
        self.id = str(alloc["ID"])
        self.bridge = bridge or BridgeConfig()
        self._network_lock = threading.Lock()
        # The driver that owns the group's namespace (docker's pause container), if any.
        self.network_manager: NetworkManager | None = None
        self.template_source = template_source
        self.artifact_roots = artifact_roots  # where file:// artifacts may come from
        self.alloc, self.dir, self.on_change = alloc, alloc_dir, on_change
        saved = saved or {}
        # The node's facts for NOMAD_DC and node.*/attr.* interpolation; kept in the record so a
        # restarted client restarts tasks with the environment they started with.
        self.node = NodeInfo.of(node if node is not None else saved.get("node"))
        self.client_status: str = saved.get("client_status", "pending")
        self.description: str = saved.get("description", "")
        self.finished_at: float | None = saved.get("finished_at")
        self.stopping = bool(saved.get("stopping", False))
        self.tasks: dict[str, TaskRunner] = {}
        self.stages: dict[str, str] = {}
        self.leaders: frozenset[str] = frozenset()
        self.envs: dict[str, dict[str, str]] = {}  # each task's environment (services interpolate it)
        self.checks: CheckWatch | None = None  # started once the allocation runs
        self._starts: dict[str, tuple[Any, Any]] = {}  # each task's StartedAt and LastRestart seen
        # Nomad's coordinator: a restored allocation starts again from prestart and moves on.
        self.phase = "prestart" if saved else "init"
        self.gates = {stage: threading.Event() for stage in OPEN["poststart"] | OPEN["prestart"] | {POSTSTOP}}
        self._killing = False
        self._no_delay = False
        # A restarted client keeps its health clock and verdict (the servers keep the first one).
        self.health = HealthWatch.restore(saved.get("health")) or HealthWatch.of(alloc)
        self._lock = threading.RLock()
        # The tasks' workload identities (task -> name -> JWT), kept in the record so a restarted
        # client restarts the tasks with the tokens they started with; templates read with them.
        self.identities: dict[str, dict[str, str]] = (
            identities if identities is not None else saved.get("identities") or {}
        )
        if identity_error:
            self._terminal("failed", f"workload identities not signed: {identity_error}")
            return
        self._build(drivers, saved.get("tasks") or {})

    def _build(self, drivers: dict[str, Driver], saved: dict[str, Any]) -> None:
        shared = self.dir / "alloc"
        for name in SHARED_DIRS:
            (shared / name).mkdir(parents=True, exist_ok=True)
        logs = shared / "logs"
        try:
            plans, batch = task_plans(self.alloc, self.node, self.dir, self.identities)
        except StartError as err:
            self._terminal("failed", str(err))
            return
        for plan in plans:
            driver = drivers.get(plan.spec.driver)
            if driver is None:
                self._terminal("failed", f"driver {plan.spec.driver!r} is not enabled on this node")
                return
        for plan in plans:
            spec = plan.spec
            task_dir = self.dir / spec.name
            paths = TaskPaths(shared, task_dir)
            for directory, mode in ((paths.local, 0o755), (paths.secrets, 0o700), (paths.tmp, 0o1777)):
                directory.mkdir(parents=True, exist_ok=True)
                directory.chmod(mode)
            self._write_identities(paths, plan)
            tracker = RestartTracker(RestartPolicy.of(plan.policy), not restarts_on_success(plan.stage, batch))
            previous = saved.get(spec.name)
            if previous is None and plan.payload_file:
                try:
                    self._write_payload(paths, plan.payload_file)
                except (StartError, OSError) as err:
                    self.tasks, self.stages = {}, {}
                    self._terminal("failed", f"task {spec.name!r}: {err}")
                    return
            self.stages[spec.name] = plan.stage
            self.envs[spec.name] = dict(spec.env)
            control = RunnerControl()
            templates = self._templates(plan, task_dir, control)
            artifacts = TaskArtifacts(plan.artifacts, Fetcher(task_dir, self.dir, self.artifact_roots))
            runner = TaskRunner(
                spec,
                drivers[spec.driver],
                tracker,
                task_dir,
                logs,
                self._changed,
                previous,
                self.gates[plan.stage],
                templates,
                artifacts,
            )
            control.runner = runner
            self.tasks[spec.name] = runner
        self.leaders = frozenset(plan.spec.name for plan in plans if plan.leader)
        self.network_manager = next(
            (m for p in plans if p.spec.netns and isinstance(m := drivers[p.spec.driver], NetworkManager)), None
        )

    def _templates(self, plan: TaskPlan, task_dir: Path, control: RunnerControl) -> TemplateManager | None:
        if not plan.templates:
            return None
        token = self.identities.get(plan.spec.name, {}).get(DEFAULT_IDENTITY, "")
        source = self.template_source(self.alloc, token) if self.template_source is not None else NoSource()
        return TemplateManager(plan.templates, task_dir, plan.spec.env, source, control)

    def _write_identities(self, paths: TaskPaths, plan: TaskPlan) -> None:
        """`identity { file = true }`: the token in the task's secrets/ (0600)."""
        task = next((t for t in group_tasks(self.alloc) if t.get("Name") == plan.spec.name), {})
        for name, token in task_files(task, self.identities.get(plan.spec.name, {})).items():
            target = paths.secrets / name
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(token)

    def _write_payload(self, paths: TaskPaths, file: str) -> None:
        """`dispatch_payload { file }`: the dispatched job's payload in the task's local/."""
        target = payload_path(paths, file)
        if target is None:
            raise StartError(f"dispatch_payload file {file!r} must be a path inside the task's local/ directory")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(dispatch_payload(self.alloc.get("Job") or {}))

    @property
    def terminal(self) -> bool:
        return self.client_status in TERMINAL

    def start(self) -> None:
        if self.terminal:
            self._teardown_network()  # a restarted client finishing what an earlier run set up
            self.persist()
            self.on_change(self)
            return
        if not self._setup_network():
            return
        self._coordinate()
        for task in self.tasks.values():
            task.start()
        if self.stopping:
            self.stop()
        self._changed()

    def _bridged(self) -> bool:
        return any(t.spec.netns for t in self.tasks.values())

    def _setup_network(self) -> bool:
        """Nomad's network hook: the allocation's namespace, attached to the bridge, before any
        task starts (kept as it is when a restarted client finds it); False when it failed the
        allocation."""
        if not self._bridged() or Path(netns_path(self.dir)).exists():
            return True
        first = next(iter(self.tasks.values())).spec
        try:
            # Nomad's order: a driver that makes namespaces (docker) makes it, the client
            # attaches it; else the client makes it.
            holder = self.network_manager.create_network(self.id, self.dir) if self.network_manager else 0
            if first.network_mode == "none":
                isolate_network(self.dir, holder)
            else:
                setup_network(self.bridge, first.ports, self.dir, holder)
        except (NetworkError, StartError) as err:
            if self.network_manager is not None:
                self.network_manager.destroy_network(self.id)
            message = f'failed to setup alloc: pre-run hook "network" failed: {err}'
            self._terminal("failed", message)
            for task in self.tasks.values():
                task.stop(("Setup Failure", message))
                task.start()  # each ends at once, dead with the event
            self.persist()
            self.on_change(self)
            return False
        return True

    def _teardown_network(self) -> None:
        """CNI DEL and the namespace removed, once no task runs in it (idempotent)."""
        with self._network_lock:  # every task's last change may ask at once
            failures = teardown_network(self.bridge, self.dir)
            if self.network_manager is not None:
                self.network_manager.destroy_network(self.id)  # its pause container, after CNI DEL
        if failures:
            log.warning("network teardown incomplete", alloc_id=self.id, failures=failures)

    def stop(self, no_shutdown_delay: bool = False) -> None:
        """The servers want it stopped (stop or evict): wait out the group's shutdown_delay,
        then kill every task but the poststop ones, leader first and sidecars last, each after
        its own shutdown_delay and within its kill_timeout; poststop tasks run next.
        no_shutdown_delay (Nomad's DesiredTransition.NoShutdownDelay) skips both delays."""
        self.stopping = True
        self._no_delay = self._no_delay or no_shutdown_delay
        self._kill(None)
        if not any(t.thread.is_alive() for t in self.tasks.values()):
            self._changed()

    def _kill(self, event: tuple[str, str] | None) -> None:
        with self._lock:
            if self._killing:
                return
            self._killing = True
        threading.Thread(target=self._kill_in_order, args=(event,), name=f"kill-{self.id[:8]}", daemon=True).start()

    def _kill_in_order(self, event: tuple[str, str] | None) -> None:
        delay = group_shutdown_delay_s(self.alloc)
        if event is None and delay > 0 and not self._no_delay:
            # Nomad's group shutdown delay: after the group's services are deregistered, before
            # any task is killed, so traffic drains away from the allocation first.
            deadline = time.monotonic() + delay
            while time.monotonic() < deadline and not self._no_delay:
                time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))
        for batch in kill_order(self.stages, self.leaders):
            runners = [self.tasks[name] for name in batch]
            for task in runners:
                task.stop(event, skip_delay=self._no_delay)
            for task in runners:
                if task.thread.is_alive():
                    task.thread.join()

    def _coordinate(self) -> None:
        """Move the lifecycle phase on and open or close each stage's gate."""
        states = {name: t.state for name, t in self.tasks.items()}
        self.phase = advance(self.phase, states, self.stages)
        for stage, gate in self.gates.items():
            if stage in OPEN[self.phase]:
                gate.set()
            else:
                gate.clear()

    def _changed(self) -> None:
        with self._lock:
            self._coordinate()
            states = {name: t.state for name, t in self.tasks.items()}
            status, description = self._derive(list(states.values()))
            if not self.terminal:
                if status in TERMINAL:
                    self._terminal(status, description)
                else:
                    self.client_status, self.description = status, description
            reason = None if self._killing else kill_reason(states, self.stages, self.leaders)
            self._follow_checks(states)
            self.persist()
        if self.terminal and not any(t.thread.is_alive() and not t.dead for t in self.tasks.values()):
            self._teardown_network()
        if reason is not None:
            # A failed task fails its allocation: the others are killed (Nomad does the same),
            # as they are when the leader dies or only sidecars are left.
            self._kill(reason)
        self.on_change(self)

    # -- services and checks ------------------------------------------------------------

    def service_registrations(self) -> list[dict[str, Any]]:
        """The Nomad services to register now: none unless the allocation runs and is not
        being stopped (Nomad deregisters before it kills the tasks)."""
        with self._lock:
            if self.client_status != "running" or self.stopping or self.terminal:
                return []
            running = {name for name, t in self.tasks.items() if t.state.get("State") == "running"}
            return registrations(self.alloc, self.node, self.envs, running)

    def has_services(self) -> bool:
        return bool(nomad_services(self.alloc, self.envs))

    def check_results(self) -> dict[str, dict[str, Any]]:
        return self.checks.results() if self.checks is not None else {}

    def check_specs(self) -> list[CheckSpec]:
        """Every check of the allocation's Nomad services, on the service's address and port
        (or the check's own port label)."""
        specs = []
        group = str(self.alloc.get("TaskGroup") or "")
        for service in nomad_services(self.alloc, self.envs):
            for check in service.checks:
                label = str(check.get("PortLabel") or service.port_label)
                address, port = port_of(self.alloc, label, self.node)
                address = service.address or address
                specs.append(spec_of(self.id, group, service.name, service.task, address, port, check))
        return specs

    def _follow_checks(self, states: dict[str, dict[str, Any]]) -> None:
        """Start the checks when the allocation first runs, stop them when it stops, and give
        each (re)started task a new check_restart grace. Called under the lock."""
        if self.checks is not None and (self.stopping or self.terminal):
            self.checks.stop()
            return
        if self.checks is None and self.client_status == "running" and not self.stopping:
            specs = self.check_specs()
            if not specs:
                return
            self.checks = CheckWatch(specs, self._task_context, self._check_restart, lambda: self.on_change(self))
            self.checks.start()
        if self.checks is None:
            return
        now = time.time()
        for name, state in states.items():
            seen = (state.get("StartedAt"), state.get("LastRestart"))
            if self._starts.get(name, seen) != seen:
                self.checks.task_started(name, now)
            self._starts[name] = seen

    def _task_context(self, task: str) -> TaskContext | None:
        runner = self.tasks.get(task)
        if runner is None or runner.handle is None or runner.state.get("State") != "running":
            return None
        return TaskContext(runner.spec.driver, runner.task_dir, dict(runner.spec.env), runner.spec.user, runner.handle)

    def _check_restart(self, task: str, reason: str) -> None:
        """check_restart's restart: the check's task, or every running task for a group
        service's check, through the same path as `alloc restart`."""
        if self.terminal or self.stopping:
            return
        if task:
            self.tasks[task].restart(reason)
            return
        for runner in self.tasks.values():
            with contextlib.suppress(NotRunning):
                runner.restart(reason)

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

    def update(self) -> AllocUpdateJson:
        """The allocation's status as the servers want it (Nomad's client alloc update). A task's
        state is Nomad's TaskState, kept by its runner (task_state.new_state's keys)."""
        with self._lock:
            body: AllocUpdateJson = {
                "ID": self.id,
                "ClientStatus": self.client_status,
                "ClientDescription": self.description,
                "TaskStates": {name: cast(TaskStateJson, t.state) for name, t in self.tasks.items()},
            }
            health = self.health.report() if self.health else None
            if health is not None:
                body["DeploymentStatus"] = health
            return body

    def restart(self, task: str, all_tasks: bool) -> None:
        """Nomad's alloc restart: the named task, or every running one; with all_tasks the dead
        ones too (prestart/poststart tasks that completed), in lifecycle order as Nomad's
        RestartAll does. Raises KeyError for an unknown task, NotRunning when the allocation
        or the named task does not run."""
        if self.terminal or self.stopping or self._killing or self.phase == "poststop":
            raise NotRunning(f"allocation {self.id} is not running")
        if task:
            self.tasks[task].restart("User requested task to restart")
            return
        if all_tasks:
            self._rerun_dead()
        reason = "User requested all tasks to restart" if all_tasks else "User requested running tasks to restart"
        restarted = 0
        for runner in self.tasks.values():
            try:
                runner.restart(reason)
                restarted += 1
            except NotRunning:
                continue  # as Nomad's: a task that is not running is not restarted
        if not restarted and not all_tasks:
            raise NotRunning(f"allocation {self.id} has no running task")

    def _rerun_dead(self) -> None:
        """The dead tasks (poststop ones aside: they have not run yet) back to pending, and the
        coordinator back to the prestart phase (Nomad's taskCoordinator.Restart): the main
        tasks, restarted next, wait for the prestart tasks again. Their threads start once
        the gates are set, so none slips through a gate about to close."""
        reason = "User requested all tasks to restart"
        with self._lock:
            dead = [r for name, r in self.tasks.items() if self.stages[name] != POSTSTOP and r.dead]
            for runner in dead:
                runner.rerun(reason)
            self.phase = "prestart"
            self._coordinate()
            for runner in dead:
                runner.start()
        self._changed()

    def signal(self, task: str, name: str, signum: int) -> None:
        """Nomad's alloc signal: the named task, or every running one."""
        if task:
            self.tasks[task].signal(name, signum)
            return
        signalled = 0
        for runner in self.tasks.values():
            try:
                runner.signal(name, signum)
                signalled += 1
            except NotRunning:
                continue
        if not signalled:
            raise NotRunning(f"allocation {self.id} has no running task")

    def task_pids(self) -> dict[str, list[int]]:
        return {name: runner.pids() for name, runner in self.tasks.items()}

    def judge_health(self, now: float) -> bool:
        """Whether the allocation's deployment health was decided just now."""
        if self.health is None or self.stopping:
            return False
        with self._lock:
            states = health_states({name: t.state for name, t in self.tasks.items()}, self.stages)
            checks = self.checks.passing() if self.checks is not None else None
            if checks is None and self.check_specs():
                checks = (False, 0.0)  # checks that have not started yet do not pass
            decided = self.health.judge(self.client_status, states, now, checks)
        if decided:
            self.persist()
        return decided

    def join_deployment(self, alloc: dict[str, Any]) -> None:
        """An in-place update moved the allocation into a new deployment: judge it again, with
        the new version's services and checks (Nomad's service hook updates them in place)."""
        with self._lock:
            self.alloc = alloc
            self.health = HealthWatch.of(alloc)
            if self.checks is not None:
                self.checks.stop()
                self.checks = None
            self._follow_checks({name: t.state for name, t in self.tasks.items()})
        self.persist()

    def persist(self) -> None:
        with self._lock:
            record = {
                "alloc": self.alloc,
                "node": self.node.saved(),
                "client_status": self.client_status,
                "description": self.description,
                "finished_at": self.finished_at,
                "stopping": self.stopping,
                "tasks": {name: t.saved() for name, t in self.tasks.items()},
                "health": self.health.saved() if self.health else None,
                "identities": self.identities,
            }
            path = self.dir / RECORD
            temporary = path.with_suffix(".tmp")
            try:
                temporary.write_text(json.dumps(record))
                temporary.replace(path)  # atomic: a crash leaves the old record or the new one
            except FileNotFoundError:
                # The directory was removed under a running task (destroy() waits for the task
                # threads first, so someone else did): nothing is left to restore from, and the
                # task's thread must go on reporting rather than die here.
                log.warning("allocation directory is gone; its state is not recorded", alloc_dir=str(self.dir))
                return

    def destroy(self) -> None:
        """Kill whatever still runs, wait for the task runners, remove the directory."""
        if self.checks is not None:
            self.checks.stop()
        for name, task in self.tasks.items():
            if self.stages.get(name) == POSTSTOP:
                task.stop()  # nothing is left to run after: not even the poststop tasks
        self.stop(no_shutdown_delay=True)
        for task in self.tasks.values():
            if task.thread.is_alive():
                task.thread.join()
        self._teardown_network()
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(self.dir)

    @classmethod
    def restore(
        cls,
        alloc_dir: Path,
        drivers: dict[str, Driver],
        on_change: Callable[[AllocRunner], None],
        template_source: SourceFactory | None = None,
        artifact_roots: tuple[Path, ...] = (),
        bridge: BridgeConfig | None = None,
    ) -> AllocRunner | None:
        try:
            record = json.loads((alloc_dir / RECORD).read_text())
            return cls(
                record["alloc"],
                alloc_dir,
                drivers,
                on_change,
                record,
                template_source=template_source,
                artifact_roots=artifact_roots,
                bridge=bridge,
            )
        except (OSError, ValueError, KeyError):
            return None
