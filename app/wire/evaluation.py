"""Nomad's evaluation as corral stores and serves it, its list stub, a job plan's annotations, and
the statuses an evaluation may hold."""

from __future__ import annotations

from typing import Literal, TypedDict

from app.wire.allocation import AllocationListStubJson, AllocationMetricJson

EvalStatus = Literal["pending", "blocked", "complete", "failed", "canceled"]
EvalTerminalStatus = Literal["complete", "failed", "canceled"]


class EvaluationJson(TypedDict, total=False):
    """Nomad's Evaluation."""

    ID: str
    Priority: int
    Type: str
    TriggeredBy: str
    Namespace: str
    JobID: str
    JobModifyIndex: int
    NodeID: str
    NodeModifyIndex: int
    DeploymentID: str
    Status: EvalStatus
    StatusDescription: str
    Wait: int
    WaitUntil: str
    NextEval: str
    PreviousEval: str
    BlockedEval: str
    RelatedEvals: list[EvaluationStubJson] | None
    FailedTGAllocs: dict[str, AllocationMetricJson] | None
    PlanAnnotations: PlanAnnotationsJson | None
    ClassEligibility: dict[str, bool] | None
    EscapedComputedClass: bool
    QuotaLimitReached: str
    MissingNonNodeResources: list[str] | None
    AnnotatePlan: bool
    QueuedAllocations: dict[str, int] | None
    LeaderACL: str
    SnapshotIndex: int
    CreateIndex: int
    ModifyIndex: int
    CreateTime: int
    ModifyTime: int
    LeaseExpiresAt: int


class EvaluationStubJson(TypedDict, total=False):
    """Nomad's EvaluationStub."""

    ID: str
    Priority: int
    Type: str
    TriggeredBy: str
    Namespace: str
    JobID: str
    NodeID: str
    DeploymentID: str
    Status: EvalStatus
    StatusDescription: str
    WaitUntil: str
    NextEval: str
    PreviousEval: str
    BlockedEval: str
    CreateIndex: int
    ModifyIndex: int
    CreateTime: int
    ModifyTime: int


class PlanAnnotationsJson(TypedDict, total=False):
    """Nomad's PlanAnnotations."""

    DesiredTGUpdates: dict[str, DesiredUpdatesJson]
    PreemptedAllocs: list[AllocationListStubJson]


class DesiredUpdatesJson(TypedDict, total=False):
    """Nomad's DesiredUpdates."""

    Ignore: int
    Place: int
    Migrate: int
    Stop: int
    InPlaceUpdate: int
    DestructiveUpdate: int
    Canary: int
    Preemptions: int
    Disconnect: int
    Reconnect: int
    RescheduleNow: int
    RescheduleLater: int


class CoreParamsJson(TypedDict):
    """corral's: the GC age thresholds (seconds) a core evaluation carries, per collector
    (evaluations.core_params; app.gc.thresholds reads and writes it)."""

    eval: float
    batch_eval: float
    job: float
    node: float
    deployment: float
