"""Frozen dataclasses the pure scheduler reads and returns.

The store builds them from rows; the scheduler never sees SQLAlchemy objects. Durations
are integer nanoseconds, like Nomad's API JSON the job specs are stored in.

One module per kind of thing: resources, groups (and job_spec, which builds them from a
specification), jobs, nodes, allocations, deployments, snapshot (the scheduler's inputs),
plans and metrics (its outputs), volume_claims (sticky host volumes). Import the names from
app.structs: the modules are how they are filed."""

from app.structs.allocations import Allocation, RunningAllocation
from app.structs.deployments import Deployment, DeploymentGroup, DeploymentStatusUpdate
from app.structs.groups import (
    Affinity,
    Constraint,
    DisconnectStrategy,
    HostVolumeAsk,
    NetworkAsk,
    ReschedulePolicy,
    Spread,
    SpreadTarget,
    Task,
    TaskGroup,
    UpdateStrategy,
)
from app.structs.jobs import Job, launches_children
from app.structs.metrics import SCORERS, AnyMetrics, EncodedMetrics, NodeScore, PlacementMetrics, ScoreParts
from app.structs.nodes import Node, NodeSet
from app.structs.plans import AllocationStop, Plan, PlanResult, SchedulerResult
from app.structs.resources import NodeUsage, Port, Resources, TaskCores
from app.structs.snapshot import Evaluation, SchedulerConfiguration, Snapshot
from app.structs.volume_claims import ClaimedVolume, VolumeClaim

__all__ = [
    "SCORERS",
    "Affinity",
    "Allocation",
    "AllocationStop",
    "AnyMetrics",
    "ClaimedVolume",
    "Constraint",
    "Deployment",
    "DeploymentGroup",
    "DeploymentStatusUpdate",
    "DisconnectStrategy",
    "EncodedMetrics",
    "Evaluation",
    "HostVolumeAsk",
    "Job",
    "NetworkAsk",
    "Node",
    "NodeScore",
    "NodeSet",
    "NodeUsage",
    "PlacementMetrics",
    "Plan",
    "PlanResult",
    "Port",
    "ReschedulePolicy",
    "Resources",
    "RunningAllocation",
    "SchedulerConfiguration",
    "SchedulerResult",
    "ScoreParts",
    "Snapshot",
    "Spread",
    "SpreadTarget",
    "Task",
    "TaskCores",
    "TaskGroup",
    "UpdateStrategy",
    "VolumeClaim",
    "launches_children",
]
