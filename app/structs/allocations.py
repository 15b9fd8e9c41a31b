"""Allocations: one placement of a task group on a node, and a live allocation of another job
as preemption sees it."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from app.structs.metrics import AnyMetrics
from app.structs.resources import Port, Resources, TaskCores
from app.structs.volume_claims import ClaimedVolume
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.wire.allocation import AllocClientStatus, AllocDesiredStatus, DesiredTransitionJson, RescheduleTrackerJson


def _no_transition() -> DesiredTransitionJson:
    return {}


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
    desired_status: AllocDesiredStatus
    client_status: AllocClientStatus
    resources: Resources
    ports: tuple[Port, ...] = ()
    previous_allocation: uuid.UUID | None = None
    deployment_id: uuid.UUID | None = None
    followup_eval_id: uuid.UUID | None = None
    reschedule_tracker: RescheduleTrackerJson | None = None
    desired_transition: DesiredTransitionJson = field(default_factory=_no_transition)
    node_name: str = ""
    create_index: int = 0
    modify_index: int = 0
    # Set on an allocation whose placement evicted others (Nomad's PreemptedAllocations).
    preempted_allocations: tuple[uuid.UUID, ...] = ()
    # Health within its deployment as its client reported it: None until reported.
    healthy: bool | None = None
    # A canary of its deployment whose group has not been promoted yet.
    canary: bool = False
    # How the scheduler chose its node (Nomad's Alloc.Metrics): PlacementMetrics as the scheduler
    # made them, EncodedMetrics once decoded from a plan in the applier; None when not recorded.
    metrics: AnyMetrics | None = None
    # Whole cores reserved per task (resources { cores = N }); their CPU is in `resources`.
    task_cores: tuple[TaskCores, ...] = ()
    # A new allocation of a sticky group: the dynamic host volumes it claims (the applier writes
    # the claims with it). Empty on allocations read back from the database.
    claims: tuple[ClaimedVolume, ...] = ()

    @property
    def host_ports(self) -> frozenset[int]:
        return frozenset(p.value for p in self.ports if p.value)

    @property
    def reserved_cores(self) -> frozenset[int]:
        return frozenset(c for t in self.task_cores for c in t.cores) if self.task_cores else frozenset()

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
class RunningAllocation:
    """A live allocation of another job, with what preemption needs to know about its job:
    the job's priority and its group's migrate.max_parallel (how many may go at once)."""

    alloc: Allocation
    job_priority: int
    max_parallel: int = 1
