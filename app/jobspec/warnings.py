"""Warnings for a registered job: the blocks corral accepts and keeps but does not act on."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# API key -> the job file's block name, per level.
_JOB = {"Multiregion": "multiregion", "UI": "ui", "Vault": "vault", "Consul": "consul"}
_GROUP = {"Volumes": "volume", "Vault": "vault", "Consul": "consul"}
_TASK = {
    "Templates": "template",
    "Vault": "vault",
    "Consul": "consul",
    "VolumeMounts": "volume_mount",
    "CSIPluginConfig": "csi_plugin",
    "Artifacts": "artifact",
    "Identity": "identity",
    "Identities": "identity",
    "Secrets": "secret",
    "Actions": "action",
    "Schedule": "schedule",
}
_RESOURCES = {"Devices": "device", "NUMA": "numa"}


def job_warnings(spec: Mapping[str, Any]) -> list[str]:
    """One line per ignored block and where it is, e.g. ``group "web": service block ...``."""
    found: list[str] = []
    found.extend(_present(spec, _JOB, "job"))
    for group in _mappings(spec.get("TaskGroups")):
        found.extend(_present(group, _GROUP, f'group "{group.get("Name", "")}"'))
        found.extend(_consul_services(group, f'group "{group.get("Name", "")}"'))
        for task in _mappings(group.get("Tasks")):
            where = f'task "{task.get("Name", "")}"'
            found.extend(_present(task, _TASK, where))
            found.extend(_consul_services(task, where))
            resources = task.get("Resources")
            if isinstance(resources, Mapping):
                found.extend(_present(resources, _RESOURCES, where))
    return found


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
