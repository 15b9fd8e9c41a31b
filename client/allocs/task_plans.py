"""What an allocation's tasks run as: each task's driver spec (environment built, config
interpolated, limits, ports, network and mounts), restart policy, lifecycle stage, templates and
artifacts, read from the allocation and its job, before any task starts (client.allocs.
alloc_runner runs them)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from client.drivers import DEFAULT_KILL_SIGNAL, Limits, LogConfig, PortMapping, StartError, TaskSpec
from client.network.bridge import netns_path
from client.tasks.artifacts import Artifact
from client.tasks.identities import task_env
from client.tasks.lifecycle import MAIN, POSTSTART, POSTSTOP, PRESTART, LifecycleError, stage_of
from client.tasks.taskenv import NodeInfo, TaskPaths, build_env, interpolate_config, node_ip
from client.tasks.volumes import task_mounts
from client.templating.spec import SpecError, TemplateSpec

NANOS = 1_000_000_000
BAD_TASK_NAME = re.compile(r"[/\\\x00]|^\.{1,2}$")
# Drivers whose task sees its directories where Nomad puts them in a chroot or container:
# /alloc, /local, /secrets (NOMAD_ALLOC_DIR and the others say so).
CHROOTED_DRIVERS = frozenset({"exec", "docker"})
IN_TASK_PATHS = TaskPaths(Path("/alloc"), Path("/"))
# Drivers whose tasks join the allocation's network namespace in bridge mode, as Nomad's do:
# exec and raw_exec by its path, docker through the pause container that owns it (a group with
# docker tasks has its namespace made by the docker driver: client/drivers/docker_pause.py).
BRIDGE_DRIVERS = frozenset({"exec", "raw_exec", "docker"})
# The group network modes whose tasks share a namespace of the allocation's: bridge (attached
# by CNI) and none (loopback only, nothing attached).
NETNS_MODES = frozenset({"bridge", "none"})
# Drivers whose task sees its image's filesystem: no PATH/HOME/TMPDIR of the host's.
IMAGE_DRIVERS = frozenset({"docker"})


@dataclass(frozen=True)
class TaskPlan:
    """One task as the allocation runs it: its driver spec (environment built, config
    interpolated), restart policy, lifecycle stage, and where its dispatch payload goes."""

    spec: TaskSpec
    policy: dict[str, Any] | None
    stage: str
    leader: bool
    payload_file: str
    templates: tuple[TemplateSpec, ...] = ()
    artifacts: tuple[Artifact, ...] = ()


def task_plans(
    alloc: dict[str, Any], node: NodeInfo, alloc_dir: Path, identities: dict[str, dict[str, str]] | None = None
) -> tuple[list[TaskPlan], bool]:
    """The group's tasks from the allocation's job, and whether it is batch. Raises StartError
    for what no task of the group could run with. `identities`: task -> identity name -> JWT,
    as the servers signed them (NOMAD_TOKEN where the identity block sets `env`)."""
    job = alloc.get("Job") or {}
    group = next((g for g in job.get("TaskGroups") or [] if g.get("Name") == alloc["TaskGroup"]), None)
    if group is None:
        raise StartError(f"task group {alloc['TaskGroup']!r} is not in job version {alloc.get('JobVersion')}")
    plans = []
    ports, network_mode = alloc_ports(alloc, node), group_network_mode(group)
    for task in group.get("Tasks") or []:
        name = str(task["Name"])
        if BAD_TASK_NAME.search(name):
            raise StartError(f"task name {name!r} must not contain '/', '\\' or NUL, nor be '.' or '..'")
        try:
            stage = stage_of(task)
        except LifecycleError as err:
            raise StartError(f"task {name!r}: {err}") from None
        driver = str(task.get("Driver", ""))
        paths = IN_TASK_PATHS if driver in CHROOTED_DRIVERS else TaskPaths(alloc_dir / "alloc", alloc_dir / name)
        env, attrs = build_env(alloc, task, node, paths, host_env=driver not in IMAGE_DRIVERS)
        env = {**task_env(task, (identities or {}).get(name, {})), **env}
        spec = TaskSpec(
            name=name,
            driver=driver,
            config=interpolate_config(dict(task.get("Config") or {}), env, attrs),
            env=env,
            kill_timeout_s=float(task.get("KillTimeout", 5 * NANOS)) / NANOS,
            kill_signal=str(task.get("KillSignal") or DEFAULT_KILL_SIGNAL),
            shutdown_delay_s=float(task.get("ShutdownDelay") or 0) / NANOS,
            user=str(task.get("User") or ""),
            limits=task_limits(task, allocated_task(alloc, name)),
            ports=ports,
            network_mode=network_mode,
            netns=netns_path(alloc_dir) if network_mode in NETNS_MODES and driver in BRIDGE_DRIVERS else "",
            mounts=task_mounts(group, task, node.host_volumes, str(alloc.get("Name", ""))),
            alloc_id=str(alloc.get("ID", "")),
            alloc_dir=alloc_dir,
            logs=LogConfig.of(task.get("LogConfig")),
        )
        payload = str((task.get("DispatchPayload") or {}).get("File") or "")
        policy = task.get("RestartPolicy") or group.get("RestartPolicy")
        artifacts = tuple(Artifact.of(raw, env, attrs) for raw in task.get("Artifacts") or ())
        try:
            templates = tuple(TemplateSpec.of(raw) for raw in task.get("Templates") or [])
        except SpecError as err:
            raise StartError(f"task {name!r}: {err}") from None
        plans.append(TaskPlan(spec, policy, stage, bool(task.get("Leader")), payload, templates, artifacts))
    return plans, job.get("Type") in ("batch", "sysbatch")


def group_tasks(alloc: dict[str, Any]) -> list[dict[str, Any]]:
    job = alloc.get("Job") or {}
    group: dict[str, Any] = next(
        (g for g in job.get("TaskGroups") or [] if g.get("Name") == alloc.get("TaskGroup")), {}
    )
    return list(group.get("Tasks") or [])


def allocated_task(alloc: dict[str, Any], task: str) -> dict[str, Any]:
    """The task's part of the allocation's AllocatedResources (Tasks.<name>), {} without one."""
    tasks = (alloc.get("AllocatedResources") or {}).get("Tasks") or {}
    found = tasks.get(task) if isinstance(tasks, dict) else None
    return found if isinstance(found, dict) else {}


def alloc_ports(alloc: dict[str, Any], node: NodeInfo) -> tuple[PortMapping, ...]:
    """The group network's ports the scheduler picked (AllocatedResources.Shared.Ports), on the
    node's address, as taskenv's NOMAD_HOST_PORT_* and NOMAD_ADDR_* name them."""
    shared = (alloc.get("AllocatedResources") or {}).get("Shared") or {}
    host_ip = node_ip(node)
    return tuple(
        PortMapping(str(p["Label"]), host_ip, int(p.get("Value") or 0), int(p.get("To") or 0))
        for p in shared.get("Ports") or []
        if p.get("Label")
    )


def group_network_mode(group: dict[str, Any]) -> str:
    """The group network's mode (Nomad's default: host)."""
    networks = group.get("Networks") or []
    return str((networks[0] or {}).get("Mode") or "host") if networks else "host"


def task_limits(task: dict[str, Any], allocated: dict[str, Any] | None = None) -> Limits:
    """The task's Resources as its driver enforces them; the cores the scheduler reserved
    (and the CPU they count for) from the allocation's AllocatedResources."""
    resources = task.get("Resources") or {}
    cpu = (allocated or {}).get("Cpu") or {}
    cores = tuple(int(core) for core in cpu.get("ReservedCores") or ())
    return Limits(
        cpu_mhz=int(cpu.get("CpuShares") or 0) if cores else int(resources.get("CPU") or 0),
        memory_mb=int(resources.get("MemoryMB") or 0),
        memory_max_mb=int(resources.get("MemoryMaxMB") or 0),
        cores=cores,
    )


def group_shutdown_delay_s(alloc: dict[str, Any]) -> float:
    job = alloc.get("Job") or {}
    group: dict[str, Any] = next(
        (g for g in job.get("TaskGroups") or [] if g.get("Name") == alloc.get("TaskGroup")), {}
    )
    return float(group.get("ShutdownDelay") or 0) / NANOS


State = TypeVar("State", bound=Mapping[str, object])


def health_states(states: dict[str, State], stages: dict[str, str]) -> list[State]:
    """The task states deployment health is judged on: not the poststop tasks, nor the
    prestart/poststart tasks that have finished successfully (they were meant to)."""
    judged = []
    for name, state in states.items():
        stage = stages.get(name, MAIN)
        if stage == POSTSTOP:
            continue
        if stage in (PRESTART, POSTSTART) and state.get("State") == "dead" and not state.get("Failed"):
            continue
        judged.append(state)
    return judged
