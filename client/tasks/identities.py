"""A task's workload identities on the client: which to ask the servers for, and where Nomad
puts them (the default identity: NOMAD_TOKEN and secrets/nomad_token; a named one `x`:
NOMAD_TOKEN_x and secrets/nomad_x.jwt), each only when its block asks (`env`, `file`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

DEFAULT = "default"
ENV = "NOMAD_TOKEN"
FILE = "nomad_token"


@dataclass(frozen=True)
class Placement:
    name: str
    env: bool
    file: bool

    @property
    def env_name(self) -> str:
        return ENV if self.name == DEFAULT else f"{ENV}_{self.name}"

    @property
    def file_name(self) -> str:
        return FILE if self.name == DEFAULT else f"nomad_{self.name}.jwt"


def placements(task: Mapping[str, Any]) -> list[Placement]:
    """The task's identities: its default one (always, as Nomad signs it for every task) and
    its named ones."""
    block = task.get("Identity")
    default: Mapping[str, Any] = block if isinstance(block, Mapping) else {}
    found = [Placement(DEFAULT, default.get("Env") is True, default.get("File") is True)]
    for block in task.get("Identities") or []:
        if isinstance(block, Mapping) and isinstance(block.get("Name"), str) and block["Name"]:
            found.append(Placement(block["Name"], block.get("Env") is True, block.get("File") is True))
    return found


def uses_identities(task: Mapping[str, Any]) -> bool:
    """Whether the task needs its identities signed before it starts: an identity block, or a
    template (which reads variables with the task's identity)."""
    return any(task.get(key) for key in ("Identity", "Identities", "Templates"))


def requests(alloc: Mapping[str, Any]) -> list[dict[str, str]]:
    """The identities to ask the servers for (empty when no task of the group uses one)."""
    job = alloc.get("Job") or {}
    group: Mapping[str, Any] = next(
        (g for g in job.get("TaskGroups") or [] if g.get("Name") == alloc.get("TaskGroup")), {}
    )
    return [
        {"AllocID": str(alloc.get("ID")), "TaskName": str(task.get("Name")), "IdentityName": placement.name}
        for task in group.get("Tasks") or []
        if uses_identities(task)
        for placement in placements(task)
    ]


def task_env(task: Mapping[str, Any], tokens: Mapping[str, str]) -> dict[str, str]:
    """NOMAD_TOKEN (and NOMAD_TOKEN_<name>) for the identities whose block sets `env`."""
    return {p.env_name: tokens[p.name] for p in placements(task) if p.env and p.name in tokens}


def task_files(task: Mapping[str, Any], tokens: Mapping[str, str]) -> dict[str, str]:
    """secrets/ file name -> token, for the identities whose block sets `file`."""
    return {p.file_name: tokens[p.name] for p in placements(task) if p.file and p.name in tokens}
