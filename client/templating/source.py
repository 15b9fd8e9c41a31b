"""What templates read, named as dependencies, and the protocol of where it comes from.
A Source answers Nomad-style blocking queries: given the index last seen, it returns once
the data may have changed past it (or the wait is over), with the new index."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from client.template.values import Service, ServiceSnippet, VarMeta

VAR, VARS, SERVICE, SERVICES = "var", "vars", "service", "services"
Value = dict[str, str] | list[VarMeta] | list[Service] | list[ServiceSnippet] | None


@dataclass(frozen=True)
class Dependency:
    kind: str  # VAR (a path), VARS (a prefix), SERVICE (a name), SERVICES
    key: str = ""

    def __str__(self) -> str:
        names = {VAR: "nomad.var.block", VARS: "nomad.var.list", SERVICE: "nomad.service", SERVICES: "nomad.services"}
        return f"{names[self.kind]}({self.key})"


@dataclass(frozen=True)
class Answer:
    value: Value  # VAR: the items, or None when the variable does not exist
    index: int


class SourceError(Exception):
    """The data could not be read (servers unreachable, refused); retried with backoff."""


class Source(Protocol):
    def fetch(self, dependency: Dependency, index: int, wait_s: float) -> Answer:
        """Blocks while the data is unchanged at `index` (at most wait_s); index 0 answers at once."""
