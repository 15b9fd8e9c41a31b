"""The scheduler's inputs besides the job: the evaluation it handles, the operator's scheduler
configuration, and the consistent snapshot one pass looks at."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from app.structs.allocations import Allocation, RunningAllocation
from app.structs.deployments import Deployment
from app.structs.jobs import Job
from app.structs.nodes import Node, NodeSet
from app.structs.resources import NodeUsage
from app.structs.volume_claims import VolumeClaim
from app.wire.evaluation import EvalStatus


@dataclass(frozen=True)
class Evaluation:
    id: uuid.UUID
    namespace: str
    job_id: str
    type: str
    priority: int
    triggered_by: str
    job_modify_index: int
    status: EvalStatus = "pending"
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
    # The job's sticky host volume claims.
    volume_claims: tuple[VolumeClaim, ...] = ()

    def __post_init__(self) -> None:
        if not isinstance(self.nodes, NodeSet):
            object.__setattr__(self, "nodes", NodeSet(self.nodes))

    @property
    def node_set(self) -> NodeSet:
        """The nodes with their index by ID (always a NodeSet after __post_init__)."""
        assert isinstance(self.nodes, NodeSet)
        return self.nodes
