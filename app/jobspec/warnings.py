"""Warnings for a registered job: the blocks corral accepts and keeps but does not act on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# API key -> the job file's block name, per level.
_JOB = {"Multiregion": "multiregion", "UI": "ui", "Vault": "vault", "Consul": "consul"}
_GROUP = {"Vault": "vault", "Consul": "consul"}
_TASK = {
    "Vault": "vault",
    "Consul": "consul",
    "CSIPluginConfig": "csi_plugin",
    "Secrets": "secret",
    "Schedule": "schedule",
}
_RESOURCES = {"Devices": "device", "NUMA": "numa"}
# Attributes (not blocks) kept without effect: API key -> the job file's name, per level.
_GROUP_ATTRIBUTES = {"MaxRunDuration": "max_run_duration", "PreventRescheduleOnLost": "prevent_reschedule_on_lost"}
_TASK_ATTRIBUTES = {"Kind": "kind", "ScalingPolicies": "scaling"}
_DISK_ATTRIBUTES = {"Sticky": "ephemeral_disk.sticky", "Migrate": "ephemeral_disk.migrate"}


def job_warnings(spec: Mapping[str, Any]) -> list[str]:
    """One line per ignored block and where it is, e.g. ``group "web": service block ...``."""
    found: list[str] = []
    found.extend(_present(spec, _JOB, "job"))
    for group in _mappings(spec.get("TaskGroups")):
        group_where = f'group "{group.get("Name", "")}"'
        found.extend(_present(group, _GROUP, group_where))
        found.extend(_consul_services(group, group_where))
        found.extend(_group_attributes(group, group_where))
        csi = _csi_volumes(group.get("Volumes"))
        found.extend(f"{group_where}: {_ignored(f'volume {name!r} (type csi)')}" for name in sorted(csi))
        for task in _mappings(group.get("Tasks")):
            where = f'task "{task.get("Name", "")}"'
            found.extend(_present(task, _TASK, where))
            found.extend(_consul_services(task, where))
            found.extend(_attributes(task, _TASK_ATTRIBUTES, where))
            mounts = _mappings(task.get("VolumeMounts"))
            found.extend(
                f"{where}: {_ignored('volume_mount of ' + repr(m['Volume']) + ' (a csi volume)')}"
                for m in mounts
                if m.get("Volume") in csi
            )
            resources = task.get("Resources")
            if isinstance(resources, Mapping):
                found.extend(_present(resources, _RESOURCES, where))
                found.extend(_host_networks(resources.get("Networks"), where))
    return found


def _group_attributes(group: Mapping[str, Any], where: str) -> list[str]:
    found = _attributes(group, _GROUP_ATTRIBUTES, where)
    disk = group.get("EphemeralDisk")
    if isinstance(disk, Mapping):
        found.extend(_attributes(disk, _DISK_ATTRIBUTES, where))
    found.extend(_host_networks(group.get("Networks"), where))
    return found


def _host_networks(networks: Any, where: str) -> list[str]:
    """`port { host_network }`: corral has no host networks; every port is on the node's address."""
    labels = [
        str(port.get("Label", ""))
        for network in _mappings(networks)
        for key in ("ReservedPorts", "DynamicPorts")
        for port in _mappings(network.get(key))
        if port.get("HostNetwork") not in (None, "", "default")
    ]
    return [f"{where}: {_ignored(f'port {label!r} host_network')}" for label in labels]


def _csi_volumes(volumes: Any) -> set[str]:
    if not isinstance(volumes, Mapping):
        return set()
    return {str(name) for name, v in volumes.items() if isinstance(v, Mapping) and v.get("Type") != "host"}


def _attributes(obj: Mapping[str, Any], keys: Mapping[str, str], where: str) -> list[str]:
    return [
        f"{where}: {_ignored(name)}" for key, name in keys.items() if obj.get(key) not in (None, [], {}, "", 0, False)
    ]


def _ignored(what: str) -> str:
    return f"{what} is accepted and kept, but corral does not act on it"


def _mappings(value: Any) -> list[Mapping[str, Any]]:
    """The objects of a list. The spec may be one the validator refused (TaskGroups: 5), and
    /v1/validate/job still reports its warnings: anything else has none to report."""
    return [item for item in value if isinstance(item, Mapping)] if isinstance(value, list) else []


def _consul_services(obj: Mapping[str, Any], where: str) -> list[str]:
    """Services of `provider = "nomad"` are registered in corral's catalog; any other provider
    (Consul, Nomad's default) needs a Consul agent corral does not have."""
    return [
        f'{where}: service block "{service.get("Name", "")}" with provider "{service.get("Provider") or "consul"}" '
        'is accepted and kept, but corral does not act on it (use provider = "nomad")'
        for service in _mappings(obj.get("Services"))
        if service.get("Provider") != "nomad"
    ]


def format_warnings(warnings: list[str]) -> str:
    """Nomad's Warnings string: empty, or a count and one ``* line`` per warning."""
    if not warnings:
        return ""
    noun = "warning" if len(warnings) == 1 else "warnings"
    return f"{len(warnings)} {noun}:\n\n" + "\n".join(f"* {line}" for line in warnings)


def _present(obj: Mapping[str, Any], keys: Mapping[str, str], where: str) -> list[str]:
    return [
        f"{where}: {block} block is accepted and kept, but corral does not act on it"
        for key, block in keys.items()
        if obj.get(key) not in (None, [], {}, "")
    ]
