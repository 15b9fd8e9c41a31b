"""Rows to Nomad's JSON shapes (PascalCase; times in Unix nanoseconds like Nomad)."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import Protocol, cast

from app.jobspec.canonical import canonical_job
from app.models import Allocation, Evaluation, Job, JobVersion, Node, SchedulerConfig
from app.pipeline.codecs.metrics_codec import placed_to_nomad
from app.values.constants import job_status
from app.values.rfc3339 import of_datetime
from app.wire.allocation import AllocationJson, AllocationMetricJson, AllocClientStatus, AllocDesiredStatus
from app.wire.api.api_allocs import AllocationListedJson
from app.wire.api.api_jobs import JobEvalAnswerJson
from app.wire.api.api_operator import SchedulerConfigJson
from app.wire.evaluation import EvalStatus, EvaluationJson, EvaluationStubJson
from app.wire.job import (
    JobChildrenSummaryJson,
    JobListStubJson,
    JobSpec,
    JobSummaryJson,
    JobVersionTagSpec,
    TaskGroupSummaryJson,
)
from app.wire.json import JsonObject
from app.wire.node import (
    NodeCpuResourcesJson,
    NodeDiskResourcesJson,
    NodeEligibility,
    NodeJson,
    NodeListStubJson,
    NodeMemoryResourcesJson,
    NodeReservedCpuResourcesJson,
    NodeReservedDiskResourcesJson,
    NodeReservedMemoryResourcesJson,
    NodeReservedNetworkResourcesJson,
    NodeReservedResourcesJson,
    NodeResourcesJson,
    NodeStatus,
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


class JobEvalResult(Protocol):
    """What a job write that creates an evaluation reports (register, scale, revert, evaluate)."""

    @property
    def eval_id(self) -> uuid.UUID | None: ...
    @property
    def eval_create_index(self) -> int: ...
    @property
    def job_modify_index(self) -> int: ...
    @property
    def index(self) -> int: ...


def job_eval_answer(result: JobEvalResult, warnings: str = "") -> JobEvalAnswerJson:
    """Nomad's JobRegisterResponse fields, shared by every job write that creates an evaluation."""
    return {
        "EvalID": ident(result.eval_id),
        "EvalCreateIndex": result.eval_create_index,
        "JobModifyIndex": result.job_modify_index,
        "Warnings": warnings,
        "Index": result.index,
    }


def job(row: Job, status: str) -> JsonObject:
    """Every key of Nomad's Job (canonical.py); `status` is derived from the job's allocations
    and evaluations (store.derived_status)."""
    return {
        **canonical_job(row.spec),
        "Stop": row.stop,
        "Status": status,
        "StatusDescription": row.status_description,
        "Stable": row.stable,
        "Version": row.version,
        "SubmitTime": nanos(row.submit_time),
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "JobModifyIndex": row.job_modify_index,
    }


def job_version(row: JobVersion, current: Job, status: str) -> JsonObject:
    return {
        **canonical_job(row.spec),
        "Status": status,
        "Stable": row.stable,
        "Version": row.version,
        "VersionTag": version_tag(row.version_tag),
        "SubmitTime": nanos(row.submit_time),
        "CreateIndex": current.create_index,
        "ModifyIndex": row.job_modify_index,
        "JobModifyIndex": row.job_modify_index,
    }


def version_tag(tag: JobVersionTagSpec | None) -> JsonObject | None:
    """A version's tag as JSON (Nomad's JobVersionTag; null on an untagged version)."""
    if tag is None:
        return None
    return {
        "Name": tag.get("Name", ""),
        "Description": tag.get("Description", ""),
        "TaggedTime": tag.get("TaggedTime", 0),
    }


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


def job_summary(row: Job, groups: dict[str, TaskGroupSummaryJson], children: JobChildrenSummaryJson) -> JobSummaryJson:
    return {
        "JobID": row.id,
        "Namespace": row.namespace,
        "Summary": groups,
        "Children": children,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


def job_stub(row: Job, summary: JobSummaryJson, status: str) -> JobListStubJson:
    """Nomad's JobListStub (every key; the job's version is on the full job only)."""
    spec = row.spec
    stub: JobListStubJson = {
        "ID": row.id,
        "ParentID": row.parent_id or "",
        "Name": row.name,
        "Namespace": row.namespace,
        "Datacenters": row.datacenters,
        "NodePool": row.node_pool,
        "Multiregion": spec.get("Multiregion"),
        "Type": row.type,
        "Priority": row.priority,
        "Periodic": row.periodic,
        "ParameterizedJob": row.parameterized,
        "Stop": row.stop,
        "Status": job_status(status),
        "StatusDescription": row.status_description,
        "JobSummary": summary,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "JobModifyIndex": row.job_modify_index,
        "SubmitTime": nanos(row.submit_time),
    }
    # Nomad's JobListStub sends Meta only when the job has some (omitempty).
    meta = spec.get("Meta")
    if meta:
        stub["Meta"] = meta
    return stub


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


def node(row: Node) -> NodeJson:
    return {
        "ID": str(row.id),
        "SecretID": "",  # never sent, as Nomad's Sanitize does for node reads
        "Datacenter": row.datacenter,
        "Name": row.name,
        "CgroupParent": "",
        # Advertised to no API client: the node's endpoint answers only the servers' signed
        # requests, so Nomad's API clients, finding no address, ask the servers, which proxy
        # (docs/security.md, "Nomad's API clients and the node's address").
        "HTTPAddr": "",
        "TLSEnabled": False,
        "Attributes": row.attributes,
        "NodeResources": _node_resources(row),
        "ReservedResources": _reserved_resources(row),
        "Links": None,
        "Meta": row.meta,
        "NodeClass": row.node_class,
        "NodePool": row.node_pool,
        "ComputedClass": row.computed_class,
        "DrainStrategy": row.drain_strategy,
        # The columns' CHECK constraints hold these to Nomad's values.
        "SchedulingEligibility": cast(NodeEligibility, row.scheduling_eligibility),
        "Status": cast(NodeStatus, row.status),
        "StatusDescription": row.status_description,
        "IdentitySigningKeyID": "",
        "StatusUpdatedAt": int(row.status_updated_at.timestamp()),
        "Events": None,
        "Drivers": row.drivers,
        "CSIControllerPlugins": None,
        "CSINodePlugins": None,
        "HostVolumes": row.host_volumes or None,
        "GCVolumesOnNodeGC": False,
        "HostNetworks": None,
        "LastDrain": row.last_drain,
        "NodeMaxAllocs": 0,
        "LastMissedHeartbeatIndex": 0,
        "LastAllocUpdateIndex": 0,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


def _node_resources(row: Node) -> NodeResourcesJson:
    """The object as the client sent it, with the amounts the columns hold merged in."""
    resources = row.node_resources.copy()
    cpu = resources.get("Cpu") or NodeCpuResourcesJson()
    resources["Cpu"] = {**cpu, "CpuShares": row.cpu_shares}
    memory = resources.get("Memory") or NodeMemoryResourcesJson()
    resources["Memory"] = {**memory, "MemoryMB": row.memory_mb}
    disk = resources.get("Disk") or NodeDiskResourcesJson()
    resources["Disk"] = {**disk, "DiskMB": row.disk_mb}
    return resources


def _reserved_resources(row: Node) -> NodeReservedResourcesJson:
    """The object as the client sent it, with the amounts the columns hold merged in."""
    reserved = row.reserved_resources.copy()
    cpu = reserved.get("Cpu") or NodeReservedCpuResourcesJson()
    reserved["Cpu"] = {**cpu, "CpuShares": row.reserved_cpu}
    memory = reserved.get("Memory") or NodeReservedMemoryResourcesJson()
    reserved["Memory"] = {**memory, "MemoryMB": row.reserved_memory_mb}
    disk = reserved.get("Disk") or NodeReservedDiskResourcesJson()
    reserved["Disk"] = {**disk, "DiskMB": row.reserved_disk_mb}
    networks = reserved.get("Networks") or NodeReservedNetworkResourcesJson()
    reserved["Networks"] = {**networks, "ReservedHostPorts": row.reserved_ports}
    return reserved


def node_stub(row: Node) -> NodeListStubJson:
    return {
        "ID": str(row.id),
        "Datacenter": row.datacenter,
        "Name": row.name,
        "NodeClass": row.node_class,
        "NodePool": row.node_pool,
        "Version": str(row.attributes.get("nomad.version", "")),
        "Address": str(row.attributes.get("unique.network.ip-address", "")),
        "Drain": row.drain,
        "SchedulingEligibility": cast(NodeEligibility, row.scheduling_eligibility),
        "Status": cast(NodeStatus, row.status),
        "StatusDescription": row.status_description,
        "Drivers": row.drivers,
        "HostVolumes": row.host_volumes or None,
        "LastDrain": row.last_drain,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


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
