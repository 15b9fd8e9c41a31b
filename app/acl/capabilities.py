"""What a token may do: the ACL object compiled from its policies, as Nomad's acl.ACL.

Policies merge: capabilities for the same namespace label add up, and `deny` anywhere wins.
A namespace is matched by its exact label first, then by the glob closest to it (the fewest
characters left to the '*'). node, agent and operator take the strongest level granted
(write over read) unless one policy denies."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.acl.policy import DENY, LIST, READ, WRITE, Policy

_RANK = {"": 0, READ: 1, LIST: 1, WRITE: 2}


def _merge_level(levels: Iterable[str]) -> str:
    chosen = ""
    for level in levels:
        if level == DENY:
            return DENY
        if _RANK.get(level, 0) > _RANK.get(chosen, 0):
            chosen = level
    return chosen


@dataclass(frozen=True)
class Acl:
    management: bool = False
    exact: dict[str, frozenset[str]] = field(default_factory=dict)
    globs: dict[str, frozenset[str]] = field(default_factory=dict)
    node: str = ""
    agent: str = ""
    operator: str = ""
    plugin: str = ""

    @classmethod
    def compile(cls, policies: Iterable[Policy]) -> Acl:
        merged: dict[str, set[str]] = {}
        nodes, agents, operators, plugins = [], [], [], []
        for policy in policies:
            for rule in policy.namespaces:
                merged.setdefault(rule.name, set()).update(rule.capabilities)
            nodes.append(policy.node)
            agents.append(policy.agent)
            operators.append(policy.operator)
            plugins.append(policy.plugin)
        final = {name: frozenset({DENY} if DENY in caps else caps) for name, caps in merged.items()}
        return cls(
            exact={n: c for n, c in final.items() if "*" not in n},
            globs={n: c for n, c in final.items() if "*" in n},
            node=_merge_level(nodes),
            agent=_merge_level(agents),
            operator=_merge_level(operators),
            plugin=_merge_level(plugins),
        )

    def namespace_capabilities(self, namespace: str) -> frozenset[str]:
        if namespace in self.exact:
            return self.exact[namespace]
        best: tuple[int, str] | None = None
        for glob in self.globs:
            if fnmatch.fnmatchcase(namespace, glob):
                distance = len(namespace) - len(glob.replace("*", ""))
                if best is None or (distance, glob) < best:
                    best = (distance, glob)
        return self.globs[best[1]] if best else frozenset()

    def allow_namespace_op(self, namespace: str, capability: str) -> bool:
        if self.management:
            return True
        capabilities = self.namespace_capabilities(namespace)
        return DENY not in capabilities and capability in capabilities

    def allow_namespace(self, namespace: str) -> bool:
        """Any capability at all in the namespace (Nomad's AllowNamespace: may see it)."""
        if self.management:
            return True
        capabilities = self.namespace_capabilities(namespace)
        return bool(capabilities) and DENY not in capabilities

    def allow(self, area: str, level: str) -> bool:
        """node, agent, operator or plugin at `level` (read or write; plugin: list or read)."""
        if self.management:
            return True
        granted = getattr(self, area)
        if granted in ("", DENY):
            return False
        if area == "plugin":
            return level == LIST or granted == READ
        return _RANK[granted] >= _RANK[level]


MANAGEMENT = Acl(management=True)
