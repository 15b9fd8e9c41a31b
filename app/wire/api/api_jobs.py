"""The API's answers to job writes and its scale status (the job spec itself is in app/wire's
job module): Nomad's JobRegisterResponse fields, JobScaleStatusResponse and ScalingEvent."""

from __future__ import annotations

from typing import NotRequired, TypedDict

from app.wire.allocation import AllocationListStubJson
from app.wire.deployment import DeploymentJson
from app.wire.evaluation import EvaluationJson
from app.wire.job import JobSummaryJson
from app.wire.json import JsonObject


class JobEvalAnswerJson(TypedDict):
    """Nomad's JobRegisterResponse fields, shared by every job write that creates an evaluation."""

    EvalID: str
    EvalCreateIndex: int
    JobModifyIndex: int
    Warnings: str
    Index: int


class ScalingEventJson(TypedDict):
    Time: int  # Unix nanoseconds
    Count: int | None
    PreviousCount: int | None
    Message: str
    Error: bool
    Meta: JsonObject | None
    EvalID: str | None
    CreateIndex: int


class TaskGroupScaleStatusJson(TypedDict):
    Desired: int
    Placed: int
    Running: int
    Healthy: int
    Unhealthy: int
    Events: list[ScalingEventJson]


class JobScaleStatusJson(TypedDict):
    JobID: str
    Namespace: str
    JobCreateIndex: int
    JobModifyIndex: int
    JobStopped: bool
    TaskGroups: dict[str, TaskGroupScaleStatusJson]


class JobRegisterRequest(TypedDict):
    """PUT /v1/jobs as `job run` sends it (Nomad's JobRegisterRequest, the fields corral reads)."""

    Job: JsonObject  # the job spec, validated by the server
    EnforceIndex: NotRequired[bool]
    JobModifyIndex: NotRequired[int]
    Submission: NotRequired[JsonObject]  # the source file and its variables (Nomad's JobSubmission)


class JobDispatchRequest(TypedDict):
    Meta: dict[str, str]
    Payload: NotRequired[str]  # base64
    IdPrefixTemplate: NotRequired[str]
    Priority: NotRequired[int]  # 0: the parent's


class JobRevertRequest(TypedDict):
    JobID: str
    JobVersion: int
    EnforcePriorVersion: NotRequired[int]


class JobStatusJson(TypedDict):
    """`corral job status -json`: Nomad's JSON of a job's status, gathered from four routes."""

    Summary: JobSummaryJson
    Allocations: list[AllocationListStubJson]
    LatestDeployment: DeploymentJson | None
    Evaluations: list[EvaluationJson]
