"""What a token may do: the ACL object compiled from its policies, as Nomad's acl.ACL.

Policies merge: capabilities for the same namespace label add up, and `deny` anywhere wins.
A namespace is matched by its exact label first, then by the glob closest to it (the fewest
characters left to the '*'). node, agent and operator take the strongest level granted
(write over read) unless one policy denies.

Variables are matched as Nomad's AllowVariableOperation does: the exact (namespace, path) of a
policy first, then a workload identity's implicit read and list of its own job's paths, then
the closest glob over "namespace NUL path"."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

from app.acl.policy import DENY, LIST, READ, WRITE, Policy

WORKLOAD_VARIABLE_CAPABILITIES = frozenset({READ, LIST})

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
class WorkloadClaim:
    """Who a workload identity speaks for (Nomad's ACLClaim)."""

    namespace: str
    job: str
    group: str
    task: str

    def own_variable_paths(self) -> frozenset[str]:
        """The paths Nomad lets a task read without any policy."""
        base = "nomad/jobs"
        return frozenset(
            {
                base,
                f"{base}/{self.job}",
                f"{base}/{self.job}/{self.group}",
                f"{base}/{self.job}/{self.group}/{self.task}",
            }
        )


def _glob_matches(glob: str, name: str) -> bool:
    """Nomad's glob.Glob: '*' matches any run of characters, everything else itself."""
    pattern = ".*".join(re.escape(part) for part in glob.split("*"))
    return re.fullmatch(pattern, name, re.S) is not None


def _closest_glob(globs: dict[str, frozenset[str]], name: str) -> frozenset[str] | None:
    best: tuple[int, str] | None = None
    for glob in globs:
        if _glob_matches(glob, name):
            difference = len(name) - len(glob) + glob.count("*")
            if best is None or (difference, glob) < best:
                best = (difference, glob)
    return globs[best[1]] if best else None


@dataclass(frozen=True)
class Acl:
    management: bool = False
    exact: dict[str, frozenset[str]] = field(default_factory=dict)
    globs: dict[str, frozenset[str]] = field(default_factory=dict)
    node: str = ""
    agent: str = ""
    operator: str = ""
    plugin: str = ""
    pool_exact: dict[str, frozenset[str]] = field(default_factory=dict)
    pool_globs: dict[str, frozenset[str]] = field(default_factory=dict)
    # Variables: "namespace NUL path" -> capabilities, exact and globbed.
    variables: dict[str, frozenset[str]] = field(default_factory=dict)
    variable_globs: dict[str, frozenset[str]] = field(default_factory=dict)
    workload: WorkloadClaim | None = None  # a workload identity's implicit access

    @classmethod
    def compile(cls, policies: Iterable[Policy], workload: WorkloadClaim | None = None) -> Acl:
        merged: dict[str, set[str]] = {}
        pools: dict[str, set[str]] = {}
        variables: dict[str, set[str]] = {}
        nodes, agents, operators, plugins = [], [], [], []
        for policy in policies:
            for rule in policy.namespaces:
                merged.setdefault(rule.name, set()).update(rule.capabilities)
                for path_rule in rule.variables:
                    variables.setdefault(f"{rule.name}\x00{path_rule.path}", set()).update(path_rule.capabilities)
            for pool in policy.node_pools:
                pools.setdefault(pool.name, set()).update(pool.capabilities)
            nodes.append(policy.node)
            agents.append(policy.agent)
            operators.append(policy.operator)
            plugins.append(policy.plugin)
        final = {name: frozenset({DENY} if DENY in caps else caps) for name, caps in merged.items()}
        pool_final = {name: frozenset({DENY} if DENY in caps else caps) for name, caps in pools.items()}
        paths = {key: frozenset({DENY} if DENY in caps else caps) for key, caps in variables.items()}
        return cls(
            pool_exact={n: c for n, c in pool_final.items() if "*" not in n},
            pool_globs={n: c for n, c in pool_final.items() if "*" in n},
            exact={n: c for n, c in final.items() if "*" not in n},
            globs={n: c for n, c in final.items() if "*" in n},
            variables={k: c for k, c in paths.items() if "*" not in k},
            variable_globs={k: c for k, c in paths.items() if "*" in k},
            workload=workload,
            node=_merge_level(nodes),
            agent=_merge_level(agents),
            operator=_merge_level(operators),
            plugin=_merge_level(plugins),
        )

    def namespace_capabilities(self, namespace: str) -> frozenset[str]:
        return _matching(self.exact, self.globs, namespace)

    def allow_node_pool_op(self, pool: str, capability: str) -> bool:
        """Nomad's AllowNodePoolOperation: read, write or delete on the pool."""
        if self.management:
            return True
        capabilities = _matching(self.pool_exact, self.pool_globs, pool)
        return DENY not in capabilities and capability in capabilities

    def allow_node_pool(self, pool: str) -> bool:
        """Any capability on the pool (Nomad's AllowNodePool: the pool is listed)."""
        if self.management:
            return True
        capabilities = _matching(self.pool_exact, self.pool_globs, pool)
        return bool(capabilities) and DENY not in capabilities

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

    def variable_capabilities(self, namespace: str, path: str) -> frozenset[str]:
        key = f"{namespace}\x00{path}"
        if key in self.variables:
            return self.variables[key]
        claim = self.workload
        if claim is not None and namespace == claim.namespace and path in claim.own_variable_paths():
            return WORKLOAD_VARIABLE_CAPABILITIES
        return _closest_glob(self.variable_globs, key) or frozenset()

    def allow_variable_op(self, namespace: str, path: str, capability: str) -> bool:
        """Nomad's AllowVariableOperation: list, read, write or destroy at `path`."""
        if self.management:
            return True
        capabilities = self.variable_capabilities(namespace, path)
        return DENY not in capabilities and capability in capabilities

    def allow_variable_search(self, namespace: str) -> bool:
        """Nomad's AllowVariableSearch: any variables rule for `namespace` ('*': in any), or a
        workload identity's own namespace (its implicit paths)."""
        if self.management:
            return True
        if self.workload is not None and namespace in ("*", self.workload.namespace):
            return True
        keys = [*self.variables, *self.variable_globs]
        if namespace == "*":
            return bool(keys)
        spaces = {key.split("\x00", 1)[0] for key in keys}
        return any(space == namespace or ("*" in space and _glob_matches(space, namespace)) for space in spaces)

    def allow_service_read(self, namespace: str) -> bool:
        """Reading service registrations: read-job in the namespace, or a workload identity of
        that namespace (Nomad lets a task discover the services of its own namespace)."""
        if self.workload is not None and self.workload.namespace == namespace:
            return True
        return self.allow_namespace_op(namespace, "read-job")

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


def _matching(exact: dict[str, frozenset[str]], globs: dict[str, frozenset[str]], name: str) -> frozenset[str]:
    """The exact label's capabilities, else the closest glob's (fewest characters left to '*')."""
    if name in exact:
        return exact[name]
    best: tuple[int, str] | None = None
    for glob in globs:
        if fnmatch.fnmatchcase(name, glob):
            distance = len(name) - len(glob.replace("*", ""))
            if best is None or (distance, glob) < best:
                best = (distance, glob)
    return globs[best[1]] if best else frozenset()


MANAGEMENT = Acl(management=True)
