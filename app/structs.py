"""Frozen dataclasses the pure scheduler reads and returns.

The store builds them from rows; the scheduler never sees SQLAlchemy objects. Durations
are integer nanoseconds, like Nomad's API JSON the job specs are stored in."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from app.constants import ALLOC_CLIENT_TERMINAL_STATUSES, DEPLOYMENT_ACTIVE_STATUSES


@dataclass(frozen=True)
class Resources:
    cpu: int = 0
    memory_mb: int = 0
    disk_mb: int = 0
    memory_max_mb: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            cpu=self.cpu + other.cpu,
            memory_mb=self.memory_mb + other.memory_mb,
            disk_mb=self.disk_mb + other.disk_mb,
            memory_max_mb=self.memory_max_mb + other.memory_max_mb,
        )

    def __sub__(self, other: Resources) -> Resources:
        return Resources(
            cpu=self.cpu - other.cpu,
            memory_mb=self.memory_mb - other.memory_mb,
            disk_mb=self.disk_mb - other.disk_mb,
            memory_max_mb=self.memory_max_mb - other.memory_max_mb,
        )

    def fits_within(self, capacity: Resources) -> bool:
        """The dimensions that are reserved on a node (memory_max is a burst limit, not a reservation)."""
        return self.cpu <= capacity.cpu and self.memory_mb <= capacity.memory_mb and self.disk_mb <= capacity.disk_mb


@dataclass(frozen=True)
class Port:
    label: str
    value: int
    to: int = 0
    host_network: str = "default"


@dataclass(frozen=True)
class NetworkAsk:
    mode: str = "host"
    reserved_ports: tuple[Port, ...] = ()
    dynamic_ports: tuple[Port, ...] = ()


@dataclass(frozen=True)
class Constraint:
    ltarget: str
    operand: str
    rtarget: str


@dataclass(frozen=True)
class Affinity:
    ltarget: str
    operand: str
    rtarget: str
    weight: int


@dataclass(frozen=True)
class SpreadTarget:
    value: str
    percent: int


@dataclass(frozen=True)
class Spread:
    attribute: str
    weight: int
    targets: tuple[SpreadTarget, ...] = ()


@dataclass(frozen=True)
class UpdateStrategy:
    max_parallel: int
    health_check: str
    min_healthy_time_ns: int
    healthy_deadline_ns: int
    progress_deadline_ns: int
    auto_revert: bool
    auto_promote: bool
    canary: int
    stagger_ns: int


@dataclass(frozen=True)
class ReschedulePolicy:
    attempts: int
    interval_ns: int
    delay_ns: int
    delay_function: str
    max_delay_ns: int
    unlimited: bool


@dataclass(frozen=True)
class Task:
    name: str
    driver: str
    resources: Resources
    constraints: tuple[Constraint, ...] = ()
    affinities: tuple[Affinity, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)
    # Env and meta changes are destructive updates in Nomad, so the scheduler must see them.
    env: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class DisconnectStrategy:
    """Group `disconnect` (or the older max_client_disconnect): how long allocations on a
    disconnected node stay `unknown` before they are lost, whether they are replaced meanwhile,
    and which of original and replacement stays when the node comes back."""

    lost_after_ns: int
    replace: bool = True
    reconcile: str = "best_score"


@dataclass(frozen=True)
class TaskGroup:
    name: str
    count: int
    tasks: tuple[Task, ...]
    ephemeral_disk_mb: int
    constraints: tuple[Constraint, ...] = ()
    affinities: tuple[Affinity, ...] = ()
    spreads: tuple[Spread, ...] = ()
    networks: tuple[NetworkAsk, ...] = ()
    update: UpdateStrategy | None = None
    reschedule: ReschedulePolicy | None = None
    disconnect: DisconnectStrategy | None = None

    @property
    def resources(self) -> Resources:
        """What one allocation of this group reserves on a node."""
        total = Resources(disk_mb=self.ephemeral_disk_mb)
        for task in self.tasks:
            total = total + task.resources
        return total

    @property
    def drivers(self) -> frozenset[str]:
        return frozenset(task.driver for task in self.tasks)


@dataclass(frozen=True)
class Job:
    namespace: str
    id: str
    name: str
    type: str
    priority: int
    datacenters: tuple[str, ...]
    node_pool: str
    task_groups: tuple[TaskGroup, ...]
    constraints: tuple[Constraint, ...] = ()
    affinities: tuple[Affinity, ...] = ()
    spreads: tuple[Spread, ...] = ()
    all_at_once: bool = False
    stop: bool = False
    version: int = 0
    job_modify_index: int = 0
    create_index: int = 0
    # A periodic or parameterized parent: it only launches child jobs and never runs anything.
    launches_children: bool = False

    @classmethod
    def from_spec(
        cls, spec: Mapping[str, Any], *, version: int = 0, job_modify_index: int = 0, create_index: int = 0
    ) -> Job:
        """Build from a normalized Nomad job specification (app.jobspec.normalize_job output)."""
        return cls(
            namespace=spec["Namespace"],
            id=spec["ID"],
            name=spec.get("Name") or spec["ID"],
            type=spec["Type"],
            priority=spec["Priority"],
            datacenters=tuple(spec.get("Datacenters") or ()),
            node_pool=spec["NodePool"],
            task_groups=tuple(_task_group(g) for g in spec.get("TaskGroups") or ()),
            constraints=_constraints(spec.get("Constraints")),
            affinities=_affinities(spec.get("Affinities")),
            spreads=_spreads(spec.get("Spreads")),
            all_at_once=bool(spec.get("AllAtOnce", False)),
            stop=bool(spec.get("Stop", False)),
            version=version,
            job_modify_index=job_modify_index,
            create_index=create_index,
            launches_children=launches_children(spec),
        )

    def group(self, name: str) -> TaskGroup | None:
        return next((g for g in self.task_groups if g.name == name), None)


def _constraints(raw: Any) -> tuple[Constraint, ...]:
    return tuple(Constraint(c.get("LTarget", ""), c.get("Operand", "="), c.get("RTarget", "")) for c in raw or ())


def _affinities(raw: Any) -> tuple[Affinity, ...]:
    return tuple(
        Affinity(a.get("LTarget", ""), a.get("Operand", "="), a.get("RTarget", ""), a.get("Weight", 50))
        for a in raw or ()
    )


def _spreads(raw: Any) -> tuple[Spread, ...]:
    return tuple(
        Spread(
            s["Attribute"],
            s.get("Weight", 50),
            tuple(SpreadTarget(t["Value"], t["Percent"]) for t in s.get("SpreadTarget") or ()),
        )
        for s in raw or ()
    )


def _ports(raw: Any) -> tuple[Port, ...]:
    return tuple(
        Port(p["Label"], p.get("Value", 0), p.get("To", 0), p.get("HostNetwork", "default")) for p in raw or ()
    )


def _task(raw: Mapping[str, Any]) -> Task:
    res = raw.get("Resources") or {}
    return Task(
        name=raw["Name"],
        driver=raw["Driver"],
        resources=Resources(
            cpu=res.get("CPU", 0),
            memory_mb=res.get("MemoryMB", 0),
            memory_max_mb=res.get("MemoryMaxMB") or res.get("MemoryMB", 0),
        ),
        constraints=_constraints(raw.get("Constraints")),
        affinities=_affinities(raw.get("Affinities")),
        config=raw.get("Config") or {},
        env=raw.get("Env") or {},
        meta=raw.get("Meta") or {},
    )


def _disconnect(raw: Mapping[str, Any]) -> DisconnectStrategy | None:
    block = raw.get("Disconnect") or {}
    lost_after = block.get("LostAfter") or raw.get("MaxClientDisconnect") or 0
    if not lost_after:
        return None
    replace = block.get("Replace")
    return DisconnectStrategy(
        int(lost_after), True if replace is None else bool(replace), block.get("Reconcile") or "best_score"
    )


def _task_group(raw: Mapping[str, Any]) -> TaskGroup:
    update, resched = raw.get("Update"), raw.get("ReschedulePolicy")
    return TaskGroup(
        disconnect=_disconnect(raw),
        name=raw["Name"],
        count=raw.get("Count", 1),
        tasks=tuple(_task(t) for t in raw.get("Tasks") or ()),
        ephemeral_disk_mb=(raw.get("EphemeralDisk") or {}).get("SizeMB", 0),
        constraints=_constraints(raw.get("Constraints")),
        affinities=_affinities(raw.get("Affinities")),
        spreads=_spreads(raw.get("Spreads")),
        networks=tuple(
            NetworkAsk(n.get("Mode", "host"), _ports(n.get("ReservedPorts")), _ports(n.get("DynamicPorts")))
            for n in raw.get("Networks") or ()
        ),
        update=None
        if update is None
        else UpdateStrategy(
            max_parallel=update["MaxParallel"],
            health_check=update["HealthCheck"],
            min_healthy_time_ns=update["MinHealthyTime"],
            healthy_deadline_ns=update["HealthyDeadline"],
            progress_deadline_ns=update["ProgressDeadline"],
            auto_revert=update["AutoRevert"],
            auto_promote=update["AutoPromote"],
            canary=update["Canary"],
            stagger_ns=update["Stagger"],
        ),
        reschedule=None
        if resched is None
        else ReschedulePolicy(
            attempts=resched["Attempts"],
            interval_ns=resched["Interval"],
            delay_ns=resched["Delay"],
            delay_function=resched["DelayFunction"],
            max_delay_ns=resched["MaxDelay"],
            unlimited=resched["Unlimited"],
        ),
    )


@dataclass(frozen=True)
class Node:
    id: uuid.UUID
    name: str
    datacenter: str
    node_class: str
    node_pool: str
    computed_class: str
    status: str
    eligibility: str
    draining: bool
    capacity: Resources
    reserved: Resources
    attributes: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, str] = field(default_factory=dict)
    healthy_drivers: frozenset[str] = frozenset()
    reserved_ports: frozenset[int] = frozenset()
    min_dynamic_port: int = 20000
    max_dynamic_port: int = 32000

    @property
    def allocatable(self) -> Resources:
        return self.capacity - self.reserved

    @property
    def ready_for_placement(self) -> bool:
        """Nomad's Node.Ready(): status ready, not draining, eligible."""
        return self.status == "ready" and not self.draining and self.eligibility == "eligible"


@dataclass(frozen=True)
class Allocation:
    id: uuid.UUID
    namespace: str
    job_id: str
    job_version: int
    task_group: str
    name: str
    node_id: uuid.UUID
    eval_id: uuid.UUID
    desired_status: str
    client_status: str
    resources: Resources
    ports: tuple[Port, ...] = ()
    previous_allocation: uuid.UUID | None = None
    deployment_id: uuid.UUID | None = None
    followup_eval_id: uuid.UUID | None = None
    reschedule_tracker: Mapping[str, Any] | None = None
    desired_transition: Mapping[str, Any] = field(default_factory=dict)
    node_name: str = ""
    create_index: int = 0
    modify_index: int = 0
    # Set on an allocation whose placement evicted others (Nomad's PreemptedAllocations).
    preempted_allocations: tuple[uuid.UUID, ...] = ()
    # Health within its deployment as its client reported it: None until reported.
    healthy: bool | None = None
    # A canary of its deployment whose group has not been promoted yet.
    canary: bool = False

    @property
    def host_ports(self) -> frozenset[int]:
        return frozenset(p.value for p in self.ports if p.value)

    @property
    def index(self) -> int:
        """The N in '<job>.<group>[N]'."""
        return int(self.name[self.name.rindex("[") + 1 : -1])

    @property
    def server_terminal(self) -> bool:
        return self.desired_status in ("stop", "evict")

    @property
    def client_terminal(self) -> bool:
        return self.client_status in ALLOC_CLIENT_TERMINAL_STATUSES

    @property
    def terminal(self) -> bool:
        """Terminal allocations no longer hold resources on their node."""
        return self.server_terminal or self.client_terminal


@dataclass(frozen=True)
class DeploymentGroup:
    """Nomad's DeploymentState for one task group. The counts of placed and healthy
    allocations are not kept here: the store counts them from the allocations."""

    auto_revert: bool = False
    auto_promote: bool = False
    progress_deadline_ns: int = 0
    # Unix ns; moved on by every healthy allocation (its health time + progress_deadline).
    require_progress_by_ns: int = 0
    promoted: bool = False
    desired_canaries: int = 0
    desired_total: int = 0


@dataclass(frozen=True)
class Deployment:
    id: uuid.UUID
    namespace: str
    job_id: str
    job_version: int
    job_create_index: int
    status: str
    status_description: str = ""
    groups: Mapping[str, DeploymentGroup] = field(default_factory=dict)
    job_modify_index: int = 0
    job_spec_modify_index: int = 0
    eval_priority: int = 50

    @property
    def active(self) -> bool:
        return self.status in DEPLOYMENT_ACTIVE_STATUSES


@dataclass(frozen=True)
class DeploymentStatusUpdate:
    deployment_id: uuid.UUID
    status: str
    description: str


@dataclass(frozen=True)
class RunningAllocation:
    """A live allocation of another job, with what preemption needs to know about its job:
    the job's priority and its group's migrate.max_parallel (how many may go at once)."""

    alloc: Allocation
    job_priority: int
    max_parallel: int = 1


@dataclass(frozen=True)
class Evaluation:
    id: uuid.UUID
    namespace: str
    job_id: str
    type: str
    priority: int
    triggered_by: str
    job_modify_index: int
    status: str = "pending"
    node_id: uuid.UUID | None = None
    deployment_id: uuid.UUID | None = None
    annotate_plan: bool = False
    snapshot_index: int = 0


@dataclass(frozen=True)
class SchedulerConfiguration:
    algorithm: str = "binpack"
    preempt_system: bool = True
    preempt_sysbatch: bool = False
    preempt_batch: bool = False
    preempt_service: bool = False
    memory_oversubscription: bool = False
    pause_eval_broker: bool = False

    def preemption_enabled(self, scheduler_type: str) -> bool:
        return {
            "system": self.preempt_system,
            "sysbatch": self.preempt_sysbatch,
            "batch": self.preempt_batch,
            "service": self.preempt_service,
        }.get(scheduler_type, False)


@dataclass(frozen=True)
class NodeUsage:
    """What the live (non-terminal) allocations on one node hold: the fit function's input."""

    resources: Resources = Resources()
    ports: frozenset[int] = frozenset()


class NodeSet(tuple[Node, ...]):
    """Nodes in canonical order (by the ID's 128-bit integer, which is also Postgres's order of
    uuid values), with an index by ID. Both are built once: a worker keeps one NodeSet for as
    long as the nodes table's state index stays put, so the thousands of nodes are not sorted
    and indexed again for every evaluation. The pass seed's shuffle starts from this order, which
    is what makes a plan independent of the order the rows arrived in."""

    by_id: Mapping[uuid.UUID, Node]

    def __new__(cls, nodes: Iterable[Node]) -> NodeSet:
        ordered = super().__new__(cls, sorted(nodes, key=_node_id_int))
        ordered.by_id = MappingProxyType({node.id: node for node in ordered})
        return ordered


def _node_id_int(node: Node) -> int:
    # The UUID's integer: comparing uuid.UUID objects costs a Python call per comparison.
    return node.id.int


@dataclass(frozen=True)
class Snapshot:
    """Everything one scheduling pass may look at, read in one consistent transaction.

    allocations are the job's own (terminal ones included, for reconciliation); usage sums
    every live allocation on each node, this job's included. nodes is always a NodeSet (in
    canonical order): a plain tuple is sorted into one here, a NodeSet is kept as it is."""

    index: int
    job: Job | None
    nodes: tuple[Node, ...]
    allocations: tuple[Allocation, ...]
    usage: Mapping[uuid.UUID, NodeUsage] = field(default_factory=dict)
    job_versions: Mapping[int, Job] = field(default_factory=dict)
    config: SchedulerConfiguration = SchedulerConfiguration()
    # Live allocations of other jobs that preemption may evict, per node: loaded only when
    # preemption is enabled for the job's type, and only those at least PRIORITY_DELTA below it.
    preemptible: Mapping[uuid.UUID, tuple[RunningAllocation, ...]] = field(default_factory=dict)
    # The job's latest deployment (any status), or None.
    deployment: Deployment | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.nodes, NodeSet):
            object.__setattr__(self, "nodes", NodeSet(self.nodes))

    @property
    def node_set(self) -> NodeSet:
        """The nodes with their index by ID (always a NodeSet after __post_init__)."""
        assert isinstance(self.nodes, NodeSet)
        return self.nodes


@dataclass(frozen=True)
class AllocationStop:
    alloc_id: uuid.UUID
    desired_status: str
    description: str
    client_status: str | None = None
    preempted_by: uuid.UUID | None = None  # for evictions: the allocation that took the room


@dataclass(frozen=True)
class Plan:
    """A scheduler's proposal; the applier re-checks every node before committing any of it."""

    eval_id: uuid.UUID
    priority: int
    snapshot_index: int
    all_at_once: bool = False
    node_update: Mapping[uuid.UUID, tuple[AllocationStop, ...]] = field(default_factory=dict)
    node_allocation: Mapping[uuid.UUID, tuple[Allocation, ...]] = field(default_factory=dict)
    node_preemptions: Mapping[uuid.UUID, tuple[AllocationStop, ...]] = field(default_factory=dict)
    # A deployment to create, or the current one with changed group states.
    deployment: Deployment | None = None
    deployment_updates: tuple[DeploymentStatusUpdate, ...] = ()

    @property
    def is_noop(self) -> bool:
        return not (
            self.node_update
            or self.node_allocation
            or self.node_preemptions
            or self.deployment
            or self.deployment_updates
        )


@dataclass(frozen=True)
class PlacementMetrics:
    """Nomad's AllocMetric for one task group: why placements failed or how a node was chosen."""

    nodes_evaluated: int = 0
    nodes_filtered: int = 0
    nodes_in_pool: int = 0
    nodes_available: Mapping[str, int] = field(default_factory=dict)
    class_filtered: Mapping[str, int] = field(default_factory=dict)
    constraint_filtered: Mapping[str, int] = field(default_factory=dict)
    nodes_exhausted: int = 0
    class_exhausted: Mapping[str, int] = field(default_factory=dict)
    dimension_exhausted: Mapping[str, int] = field(default_factory=dict)
    coalesced_failures: int = 0


@dataclass(frozen=True)
class SchedulerResult:
    """What one scheduling pass decided, beyond the plan itself."""

    plan: Plan
    failed_tg_allocs: Mapping[str, PlacementMetrics] = field(default_factory=dict)
    queued_allocations: Mapping[str, int] = field(default_factory=dict)
    class_eligibility: Mapping[str, bool] = field(default_factory=dict)
    escaped_computed_class: bool = False
    # A system job's rolling update stopped at max_parallel: evaluate again after this long
    # (its `stagger`) to update the next batch.
    rolling_wait_ns: int = 0
    # System and sysbatch jobs: the nodes too full for a placement. Their blocked evaluation
    # waits on these nodes only (Nomad's per-node system blocked evals, UnblockNode).
    blocked_nodes: frozenset[uuid.UUID] = frozenset()

    @property
    def blocked(self) -> bool:
        """Some placements failed: the worker creates (or keeps) a blocked evaluation."""
        return bool(self.failed_tg_allocs)


@dataclass(frozen=True)
class PlanResult:
    node_update: Mapping[uuid.UUID, tuple[uuid.UUID, ...]] = field(default_factory=dict)
    node_allocation: Mapping[uuid.UUID, tuple[uuid.UUID, ...]] = field(default_factory=dict)
    node_preemptions: Mapping[uuid.UUID, tuple[uuid.UUID, ...]] = field(default_factory=dict)
    rejected_nodes: tuple[uuid.UUID, ...] = ()
    refresh_index: int = 0
    alloc_index: int = 0

    @property
    def partial(self) -> bool:
        return self.refresh_index != 0


def launches_children(spec: Mapping[str, Any]) -> bool:
    """Nomad's IsPeriodic() or IsParameterized(): a periodic block (enabled or not), or a
    parameterized block on a job that was not itself dispatched."""
    if spec.get("Periodic") is not None:
        return True
    return spec.get("ParameterizedJob") is not None and not spec.get("Dispatched", False)
