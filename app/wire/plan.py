"""The stored JSON of plans, plan results, deployments and placement metrics, as TypedDicts:
the wire format between worker and applier (app.pipeline.codecs.plan_codec encodes and decodes it),
and the type of the JSONB columns that hold it (app.models)."""

from __future__ import annotations

import uuid
from typing import NotRequired, TypedDict

from app.wire.allocation import AllocClientStatus, AllocDesiredStatus, DesiredTransitionJson, RescheduleTrackerJson
from app.wire.deployment import DeploymentStatus


class ResourcesJson(TypedDict):
    CPU: int
    MemoryMB: int
    MemoryMaxMB: NotRequired[int]  # absent in the oldest rows
    DiskMB: int


class AllocatedCpuJson(TypedDict):
    """Nomad's AllocatedCpuResources: a task's CPU and the whole cores reserved for it."""

    CpuShares: int
    ReservedCores: list[int]


class AllocatedTaskJson(TypedDict):
    """One task of Nomad's AllocatedResources.Tasks (corral records it for tasks given cores)."""

    Cpu: AllocatedCpuJson


class PortJson(TypedDict):
    Label: str
    Value: int
    To: int
    HostNetwork: str


class AllocJson(TypedDict):
    ID: str
    Name: str
    JobVersion: int
    TaskGroup: str
    NodeName: str
    EvalID: str
    Resources: ResourcesJson
    Ports: list[PortJson]
    PreviousAllocation: str | None
    PreemptedAllocations: list[str]
    RescheduleTracker: RescheduleTrackerJson | None
    DeploymentID: str | None
    Canary: bool
    # Written only where they differ from a fresh placement's: an in-place update carries the
    # allocation as the scheduler saw it. Fresh placements, tens of thousands a plan, stay small.
    DesiredStatus: NotRequired[AllocDesiredStatus]
    ClientStatus: NotRequired[AllocClientStatus]
    FollowupEvalID: NotRequired[str]
    DesiredTransition: NotRequired[DesiredTransitionJson]
    CreateIndex: NotRequired[int]
    ModifyIndex: NotRequired[int]
    Healthy: NotRequired[bool]
    # How its node was chosen: PlacedMetricsJson's text (metrics_codec.placed_text), absent when not
    # recorded. A string, not an object: Postgres then stores a plan's tens of thousands without
    # parsing each score into a numeric and printing it back for the applier.
    Metrics: NotRequired[str]
    # The whole cores reserved per task (resources { cores = N }), as AllocatedResources.Tasks.
    Tasks: NotRequired[dict[str, AllocatedTaskJson]]
    # A sticky group's new allocation: the dynamic host volumes it claims, absent when none.
    VolumeClaims: NotRequired[list[ClaimedVolumeJson]]


class StopJson(TypedDict):
    AllocID: str
    DesiredStatus: AllocDesiredStatus
    Description: str
    ClientStatus: AllocClientStatus | None
    PreemptedByAllocation: str | None


class DeploymentGroupJson(TypedDict, total=False):
    """A deployment's group as a plan creates it (also the shape of each group in deployments.task_groups)."""

    AutoRevert: bool
    AutoPromote: bool
    ProgressDeadline: int
    RequireProgressBy: int
    Promoted: bool
    DesiredCanaries: int
    DesiredTotal: int
    # Nomad's DeploymentState counts: the API counts them at read time; not written by corral.
    PlacedAllocs: int
    HealthyAllocs: int
    UnhealthyAllocs: int


class PlanDeploymentJson(TypedDict):
    ID: str
    Namespace: str
    JobID: str
    JobVersion: int
    JobCreateIndex: int
    JobModifyIndex: int
    JobSpecModifyIndex: NotRequired[int]  # absent in older rows (and 0 in a new deployment)
    Status: DeploymentStatus
    StatusDescription: str
    EvalPriority: int
    TaskGroups: dict[str, DeploymentGroupJson]


class StatusUpdateJson(TypedDict):
    DeploymentID: str
    Status: DeploymentStatus
    StatusDescription: str


class CompletionJson(TypedDict):
    """What the worker would write on completing its evaluation after a plan applied in full
    (broker.complete_success), carried with its last plan so the applier completes it in the same
    commit. Only the common case travels: no failed task groups, no blocked or follow-up evaluation."""

    SnapshotIndex: int
    QueuedAllocations: dict[str, int]
    ClassEligibility: dict[str, bool]
    EscapedComputedClass: bool
    ScheduledAt: str  # ISO 8601: pending evaluations due after it were not served by this pass
    Description: str


class ClaimedVolumeJson(TypedDict):
    """A volume a new allocation claims (app.structs.ClaimedVolume)."""

    VolumeID: str
    VolumeName: str


class PlanRowJson(TypedDict):
    """The columns of a `plans` row that hold the plan (lease and bookkeeping columns aside)."""

    eval_id: uuid.UUID
    priority: int
    snapshot_index: int
    all_at_once: bool
    namespace: str
    job_id: str
    node_update: dict[str, list[StopJson]]
    node_allocation: dict[str, list[AllocJson]]
    node_preemptions: dict[str, list[StopJson]]
    deployment: PlanDeploymentJson | None
    deployment_updates: list[StatusUpdateJson]
    # The placements' metrics as lines of text (plan_codec.encode_plan); absent or None: none,
    # or in each AllocJson's Metrics (a plan of an older worker).
    placement_metrics: NotRequired[str | None]


class PlanResultJson(TypedDict):
    """The columns of a `plan_results` row that hold the verdict."""

    node_update: dict[str, list[str]]
    node_allocation: dict[str, list[str]]
    node_preemptions: dict[str, list[str]]
    rejected_nodes: list[str]
    refresh_index: int
    alloc_index: int


# One of a selection's best nodes: its ID, its final score, then each scorer's part (null: the
# scorer took no part) in app.structs.SCORERS order.
TopScoreJson = tuple[str, float, float | None, float | None, float | None, float | None, float | None, float | None]


class PlacedMetricsJson(TypedDict):
    """A placed allocation's metrics as its plan and its `allocations.metrics` column hold them:
    compact, for a big plan carries tens of thousands (Nomad's form is three times the size).
    The API serves them as Nomad's AllocMetric (metrics_codec.placed_to_nomad). The four maps are
    written only when not empty."""

    Evaluated: int
    Filtered: int
    Exhausted: int
    InPool: int
    Available: dict[str, int]
    Top: list[TopScoreJson]
    Time: int  # nanoseconds
    ClassFiltered: NotRequired[dict[str, int]]
    ConstraintFiltered: NotRequired[dict[str, int]]
    ClassExhausted: NotRequired[dict[str, int]]
    DimensionExhausted: NotRequired[dict[str, int]]
