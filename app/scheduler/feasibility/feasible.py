"""Which nodes can run a task group at all, before resources: readiness, datacenter, pool,
drivers and constraints. Results are cached per computed node class, except for the
constraints that read unique.* values, which "escape" the class and are checked per node."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from fnmatch import fnmatchcase

from app.scheduler.feasibility import operators
from app.scheduler.feasibility.sticky import NO_CLAIMS, StickyVolumes
from app.scheduler.feasibility.targets import escapes_class, resolve
from app.structs import Constraint, HostVolumeAsk, Job, Node, TaskGroup

MISSING_DRIVERS = "missing drivers"
MISSING_HOST_VOLUMES = "missing compatible host volumes"  # Nomad's FilterConstraintHostVolumes


def constraint_text(constraint: Constraint) -> str:
    """Nomad's Constraint.String(), the key of ConstraintFiltered."""
    return f"{constraint.ltarget} {constraint.operand} {constraint.rtarget}"


def satisfies(constraint: Constraint, node: Node) -> bool:
    left, right = resolve(constraint.ltarget, node), resolve(constraint.rtarget, node)
    return operators.check(constraint.operand, left, right)


def has_host_volumes(
    node: Node,
    asks: Iterable[HostVolumeAsk],
    namespace: str = "default",
    alloc_name: str = "",
    group: str = "",
    sticky: StickyVolumes = NO_CLAIMS,
) -> bool:
    """Nomad's HostVolumeChecker: for every source (a per_alloc one with the allocation's index
    suffix), the node holds a ready dynamic host volume of that name in the job's namespace
    (one its sticky claims allow), or declares a static host volume of that name (a read-write
    ask needs one the node does not declare read-only; a sticky ask never takes a static one)."""
    for ask in asks:
        source = ask.source_for(alloc_name)
        volume_id = node.dynamic_host_volumes.get((namespace, source))
        if volume_id is not None:
            if ask.sticky and not sticky.allows(group, source, volume_id):
                return False
            continue
        read_only = node.host_volumes.get(source)
        if ask.sticky or read_only is None or (read_only and not ask.read_only):
            return False
    return True


def in_datacenters(node: Node, datacenters: Iterable[str]) -> bool:
    patterns = tuple(datacenters) or ("*",)
    return any(fnmatchcase(node.datacenter, pattern) for pattern in patterns)


def in_pool(node: Node, pool: str) -> bool:
    return pool == "all" or node.node_pool == pool


def in_job_scope(node: Node, job: Job) -> bool:
    """The node is one the job may use at all: its datacenters and node pool."""
    return in_datacenters(node, job.datacenters) and in_pool(node, job.node_pool)


class JobScope:
    """in_job_scope for many nodes: a cluster has a handful of datacenters and thousands of
    nodes, so each datacenter is matched against the job's patterns once, not once per node."""

    def __init__(self, job: Job) -> None:
        self._job = job
        self._datacenters: dict[str, bool] = {}

    def __call__(self, node: Node) -> bool:
        inside = self._datacenters.get(node.datacenter)
        if inside is None:
            inside = self._datacenters[node.datacenter] = in_datacenters(node, self._job.datacenters)
        return inside and in_pool(node, self._job.node_pool)


def group_constraints(group: TaskGroup) -> tuple[Constraint, ...]:
    """Group constraints plus every task's: Nomad checks them together for the group."""
    return group.constraints + tuple(c for task in group.tasks for c in task.constraints)


@dataclass(frozen=True)
class _Split:
    cached: tuple[Constraint, ...]
    escaped: tuple[Constraint, ...]


def _split(constraints: Iterable[Constraint]) -> _Split:
    node_level = [c for c in constraints if c.operand not in operators.PLACEMENT_OPERANDS]
    escaped = tuple(c for c in node_level if escapes_class(c.ltarget) or escapes_class(c.rtarget))
    return _Split(tuple(c for c in node_level if c not in escaped), escaped)


def _first_failure(constraints: Iterable[Constraint], node: Node) -> str | None:
    for constraint in constraints:
        if not satisfies(constraint, node):
            return constraint_text(constraint)
    return None


class Feasibility:
    """Per-pass checker; `check` returns None when feasible, else the reason for metrics."""

    def __init__(self, job: Job, sticky: StickyVolumes = NO_CLAIMS) -> None:
        self._sticky = sticky
        self._job = _split(job.constraints)
        self._groups = {g.name: _split(group_constraints(g)) for g in job.task_groups}
        self._drivers = {g.name: g.drivers for g in job.task_groups}
        self._volumes = {g.name: g.host_volumes for g in job.task_groups}
        self._namespace = job.namespace
        self._job_cache: dict[str, str | None] = {}
        self._group_cache: dict[tuple[str, str], str | None] = {}
        self.escaped = bool(self._job.escaped) or any(s.escaped for s in self._groups.values())

    def check(self, node: Node, group: TaskGroup, alloc_name: str = "") -> str | None:
        """`alloc_name`: the placement's (or the allocation's) name, which a per_alloc volume's
        source takes its index from."""
        return self._check_job(node) or self._check_group(node, group.name, alloc_name)

    def _check_job(self, node: Node) -> str | None:
        key = node.computed_class
        if key not in self._job_cache:
            self._job_cache[key] = _first_failure(self._job.cached, node)
        return self._job_cache[key] or _first_failure(self._job.escaped, node)

    def _check_group(self, node: Node, name: str, alloc_name: str) -> str | None:
        # Driver health is per node (it is not part of the computed class), and cheap.
        if not self._drivers[name] <= node.healthy_drivers:
            return MISSING_DRIVERS
        # Host volumes are not part of the computed class either (Nomad's "available" checks).
        volumes = self._volumes[name]
        if volumes and not has_host_volumes(node, volumes, self._namespace, alloc_name, name, self._sticky):
            return MISSING_HOST_VOLUMES
        key = (name, node.computed_class)
        if key not in self._group_cache:
            self._group_cache[key] = _first_failure(self._groups[name].cached, node)
        return self._group_cache[key] or _first_failure(self._groups[name].escaped, node)

    def class_eligibility(self) -> dict[str, bool]:
        """Per computed class seen: eligible for the job and for at least one group."""
        out: dict[str, bool] = {}
        for computed, job_reason in self._job_cache.items():
            out[computed] = job_reason is None and any(
                reason is None for (_, cls), reason in self._group_cache.items() if cls == computed
            )
        return out
