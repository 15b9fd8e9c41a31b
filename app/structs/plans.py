"""What a scheduling pass returns: the plan (placements, stops, evictions, deployment changes),
why placements failed, and what the applier made of the plan."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field

from app.structs.allocations import Allocation
from app.structs.deployments import Deployment, DeploymentStatusUpdate
from app.structs.metrics import PlacementMetrics
from app.wire.allocation import AllocClientStatus, AllocDesiredStatus


@dataclass(frozen=True)
class AllocationStop:
    alloc_id: uuid.UUID
    desired_status: AllocDesiredStatus
    description: str
    client_status: AllocClientStatus | None = None
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
