"""Rows to Nomad's JSON shapes (PascalCase; times in Unix nanoseconds like Nomad)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import cast

from app.jobspec.canonical import canonical_job
from app.models import Allocation, Evaluation, JobVersion, SchedulerConfig
from app.pipeline.codecs.metrics_codec import placed_to_nomad
from app.values.rfc3339 import of_datetime
from app.wire.allocation import AllocationJson, AllocationMetricJson, AllocClientStatus, AllocDesiredStatus
from app.wire.api.api_allocs import AllocationListedJson
from app.wire.api.api_operator import SchedulerConfigJson
from app.wire.evaluation import EvalStatus, EvaluationJson, EvaluationStubJson
from app.wire.job import (
    JobSpec,
)
from app.wire.plan import PlacedMetricsJson

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def nanos(moment: datetime | None) -> int:
    if moment is None:
        return 0
    delta = moment - EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1_000


def ident(value: uuid.UUID | None) -> str:
    return "" if value is None else str(value)


def version_spec(row: JobVersion) -> JobSpec:
    """A version's stored spec with the server-set fields Nomad's job carries at that version
    (what an allocation's Job shows)."""
    return {
        **row.spec,
        "Stable": row.stable,
        "Version": row.version,
        "VersionTag": row.version_tag,
        "SubmitTime": nanos(row.submit_time),
        "ModifyIndex": row.job_modify_index,
        "JobModifyIndex": row.job_modify_index,
    }


def evaluation(row: Evaluation) -> EvaluationJson:
    return {
        "ID": str(row.id),
        "Namespace": row.namespace or "-",  # core evaluations belong to no namespace, as in Nomad
        "Priority": row.priority,
        "Type": row.type,
        "TriggeredBy": row.triggered_by,
        "JobID": row.job_id,
        "JobModifyIndex": row.job_modify_index,
        "NodeID": ident(row.node_id),
        "NodeModifyIndex": row.node_modify_index or 0,
        "DeploymentID": ident(row.deployment_id),
        "Status": cast(EvalStatus, row.status),  # the column's CHECK constraint holds it to these
        "StatusDescription": row.status_description,
        "Wait": row.wait_ns,
        "WaitUntil": of_datetime(row.wait_until),  # Go's zero time when the evaluation waits for nothing
        "NextEval": ident(row.next_eval),
        "PreviousEval": ident(row.previous_eval),
        "BlockedEval": ident(row.blocked_eval),
        # Filled in by GET /v1/evaluation/:id?related=true only, as in Nomad.
        "RelatedEvals": None,
        "FailedTGAllocs": row.failed_tg_allocs or None,
        "ClassEligibility": row.class_eligibility or None,
        "EscapedComputedClass": row.escaped_computed_class,
        "QuotaLimitReached": row.quota_limit_reached,
        # corral has no resources outside nodes (CSI volumes, quotas) that could be missing.
        "MissingNonNodeResources": None,
        "AnnotatePlan": row.annotate_plan,
        "QueuedAllocations": row.queued_allocations or None,
        "PlanAnnotations": row.plan_annotations,
        # The leader's token for the scheduler's RPCs in Nomad; corral's workers need none.
        "LeaderACL": "",
        "SnapshotIndex": row.snapshot_index,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "CreateTime": nanos(row.create_time),
        "ModifyTime": nanos(row.modify_time),
        # corral's extension: a pending evaluation with a lease is in flight on a worker until
        # then (nanoseconds; 0 while queued or once finished). Claims take no state index.
        "LeaseExpiresAt": nanos(row.lease_expires_at),
    }


# What Nomad's EvaluationStub (the RelatedEvals entries) leaves out of the Evaluation: the
# indexes and wait of what triggered it, what the scheduler found, and corral's lease.
_NOT_IN_EVALUATION_STUB = frozenset(
    {"JobModifyIndex", "NodeModifyIndex", "Wait", "RelatedEvals", "LeaderACL", "SnapshotIndex", "LeaseExpiresAt"}
    | {"FailedTGAllocs", "ClassEligibility", "EscapedComputedClass", "QuotaLimitReached", "MissingNonNodeResources"}
    | {"AnnotatePlan", "QueuedAllocations", "PlanAnnotations"}
)


def evaluation_stub(row: Evaluation) -> EvaluationStubJson:
    """Nomad's EvaluationStub: the Evaluation's keys but those, in the Evaluation's order."""
    # The cast holds: every key left is one the stub has, with the Evaluation's type.
    return cast(
        EvaluationStubJson, {key: value for key, value in evaluation(row).items() if key not in _NOT_IN_EVALUATION_STUB}
    )


def allocation(
    row: Allocation, job_spec: JobSpec | None = None, placement_metrics: str | None = None, job: JobSpec | None = None
) -> AllocationJson:
    """Every key of Nomad's Allocation; `job_spec` is the stored spec of the allocation's job
    version (None when it was pruned, or in lists, which leave the job out), or `job` that spec
    already encoded (allocation_job). `placement_metrics`: the text column's value
    (app.store.allocs.placement_metrics_texts), which the row does not map."""
    return {
        "ID": str(row.id),
        "Namespace": row.namespace,
        "EvalID": str(row.eval_id),
        "Name": row.name,
        "NodeID": str(row.node_id),
        "NodeName": row.node_name,
        "JobID": row.job_id,
        "Job": job if job_spec is None else _versioned(job_spec, row.job_version),
        "TaskGroup": row.task_group,
        # Nomad's pre-0.9 forms, replaced by AllocatedResources: SharedResources and TaskResources
        # are nil for every allocation placed since. Resources is kept as the sum over the tasks
        # (what the allocation holds on its node), which the UI's utilisation bars read.
        "Resources": {"CPU": row.cpu, "MemoryMB": row.memory_mb, "DiskMB": row.disk_mb},
        "SharedResources": None,
        "TaskResources": None,
        "AllocatedResources": row.allocated_resources or None,
        "Metrics": _placement_metrics(row, placement_metrics),
        # The columns' CHECK constraints hold the statuses to these values.
        "DesiredStatus": cast(AllocDesiredStatus, row.desired_status),
        "DesiredDescription": row.desired_description,
        "DesiredTransition": row.desired_transition,
        "ClientStatus": cast(AllocClientStatus, row.client_status),
        "ClientDescription": row.client_description,
        "TaskStates": row.task_states or None,
        # Client-side disconnect history and the CNI network status: corral's client
        # reports neither.
        "AllocStates": None,
        "PreviousAllocation": ident(row.previous_allocation),
        "NextAllocation": ident(row.next_allocation),
        "DeploymentID": ident(row.deployment_id),
        "DeploymentStatus": row.deployment_status,
        "RescheduleTracker": row.reschedule_tracker,
        "NetworkStatus": None,
        "FollowupEvalID": ident(row.followup_eval_id),
        "PreemptedAllocations": [str(a) for a in row.preempted_allocations] or None,
        "PreemptedByAllocation": ident(row.preempted_by_allocation),
        # corral signs no workload identities.
        "SigningKeyID": "",
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "AllocModifyIndex": row.alloc_modify_index,
        "CreateTime": nanos(row.create_time),
        "ModifyTime": nanos(row.modify_time),
    }


def allocation_job(row: JobVersion) -> JobSpec:
    """An allocation's Job at this version, as allocation() encodes it."""
    return _versioned(version_spec(row), row.version)


def _versioned(spec: JobSpec, version: int) -> JobSpec:
    # The canonical form of a JobSpec is one, every key filled in.
    return cast(JobSpec, {**canonical_job(spec), "Version": version})


def _placement_metrics(row: Allocation, text: str | None) -> AllocationMetricJson | None:
    """Nomad's AllocMetric from the compact form stored: the text column, or the jsonb one of rows
    written before revision 0037 (or by an older applier)."""
    if text:
        return placed_to_nomad(cast(PlacedMetricsJson, json.loads(text)))
    return placed_to_nomad(cast(PlacedMetricsJson, row.metrics)) if row.metrics else None


def allocation_listed(row: Allocation, job_type: str) -> AllocationListedJson:
    """An allocation in a list: every key of Nomad's AllocListStub, plus the rest of the
    full Allocation but its Job and Metrics (corral's lists have always carried the rest, and
    the CLI and UI read them; Metrics, not in Nomad's stub either, would add five nodes' scores
    to every row of a big job's list)."""
    listed = allocation(row)
    del listed["Job"], listed["Metrics"]
    return {**listed, "JobType": job_type, "JobVersion": row.job_version}


def scheduler_config(row: SchedulerConfig) -> SchedulerConfigJson:
    return {
        "SchedulerAlgorithm": row.scheduler_algorithm,
        "PreemptionConfig": {
            "SystemSchedulerEnabled": row.preemption_system,
            "SysBatchSchedulerEnabled": row.preemption_sysbatch,
            "BatchSchedulerEnabled": row.preemption_batch,
            "ServiceSchedulerEnabled": row.preemption_service,
        },
        "MemoryOversubscriptionEnabled": row.memory_oversubscription,
        "RejectJobRegistration": row.reject_job_registration,
        "PauseEvalBroker": row.pause_eval_broker,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }
