"""The Source of a client that has no servers to ask (a runner built without one): templates
that read only the task's environment still render; any variable or service read fails."""

from __future__ import annotations

from client.templating.source import Answer, Dependency, SourceError


class NoSource:
    def fetch(self, dependency: Dependency, index: int, wait_s: float) -> Answer:
        raise SourceError(f"{dependency}: this client has no servers to read it from")
