"""An allocation's `provider = "nomad"` services as the client registers them: Nomad's
registration ID, the address and port from the allocation's network (address mode host), and
name and tags interpolated with the environment of the task (or, for a group service, of the
group's first task). Pure: the agent sends what this returns (client/agent.py)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from client.tasks.taskenv import NodeInfo, replace_env

PREFIX = "_nomad-task-"
NOMAD = "nomad"


@dataclass(frozen=True)
class ServiceSpec:
    """One Nomad service of the allocation, with where it runs: `task` is "" for a group service."""

    name: str
    task: str
    owner: str  # Nomad's workload name in the ID: the task, or "group-<group>"
    port_label: str
    tags: tuple[str, ...]
    address: str
    checks: tuple[dict[str, Any], ...]


def service_id(alloc_id: str, owner: str, name: str, port_label: str) -> str:
    """Nomad's MakeAllocServiceID: `_nomad-task-<alloc>-<task|group-<group>>-<name>-<port label>`."""
    return f"{PREFIX}{alloc_id}-{owner}-{name}-{port_label}"


def group_of(alloc: Mapping[str, Any]) -> dict[str, Any]:
    job = alloc.get("Job") or {}
    return next((dict(g) for g in job.get("TaskGroups") or [] if g.get("Name") == alloc.get("TaskGroup")), {})


def nomad_services(alloc: Mapping[str, Any], envs: Mapping[str, Mapping[str, str]]) -> list[ServiceSpec]:
    """The allocation's Nomad services, interpolated. `envs` maps each task to its environment;
    a group service takes its first task's."""
    group = group_of(alloc)
    tasks = [dict(t) for t in group.get("Tasks") or []]
    first_env = envs.get(str(tasks[0].get("Name"))) if tasks else None
    found = [_spec(s, "", f"group-{group.get('Name', '')}", first_env or {}) for s in group.get("Services") or []]
    for task in tasks:
        name = str(task.get("Name", ""))
        found += [_spec(s, name, name, envs.get(name) or {}) for s in task.get("Services") or []]
    return [spec for spec, provider in found if provider == NOMAD]


def _spec(service: Mapping[str, Any], task: str, owner: str, env: Mapping[str, str]) -> tuple[ServiceSpec, str]:
    spec = ServiceSpec(
        name=replace_env(str(service.get("Name") or ""), env),
        task=task,
        owner=owner,
        port_label=str(service.get("PortLabel") or ""),
        tags=tuple(replace_env(str(tag), env) for tag in service.get("Tags") or []),
        address=replace_env(str(service.get("Address") or ""), env),
        checks=tuple(dict(c) for c in service.get("Checks") or []),
    )
    return spec, str(service.get("Provider") or "consul")


def port_of(alloc: Mapping[str, Any], label: str, node: NodeInfo) -> tuple[str, int]:
    """Host address and port of a port label (address mode host): the allocation's port by that
    label, a number used as it is, or the node's address and no port for no label."""
    host_ip = node.attributes.get("unique.network.ip-address") or "127.0.0.1"
    if not label:
        return host_ip, 0
    if label.isdigit():
        return host_ip, int(label)
    shared = (alloc.get("AllocatedResources") or {}).get("Shared") or {}
    for port in shared.get("Ports") or []:
        if port.get("Label") == label:
            return str(port.get("HostIP") or host_ip), int(port.get("Value") or 0)
    return host_ip, 0


def registrations(
    alloc: Mapping[str, Any], node: NodeInfo, envs: Mapping[str, Mapping[str, str]], running: set[str]
) -> list[dict[str, Any]]:
    """The registrations to hold for the allocation now: its group services, and the services
    of each task in `running` (Nomad registers a task's services once it runs)."""
    alloc_id = str(alloc.get("ID", ""))
    out = []
    for spec in nomad_services(alloc, envs):
        if spec.task and spec.task not in running:
            continue
        address, port = port_of(alloc, spec.port_label, node)
        out.append(
            {
                "ID": service_id(alloc_id, spec.owner, spec.name, spec.port_label),
                "ServiceName": spec.name,
                "Tags": list(spec.tags),
                "Address": spec.address or address,
                "Port": port,
            }
        )
    return out
