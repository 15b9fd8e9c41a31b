"""Rows to Nomad's JSON shapes (PascalCase; times in Unix nanoseconds like Nomad)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any, Protocol

from app.models import Allocation, Evaluation, Job, JobVersion, Node, SchedulerConfig

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


def job_eval_answer(result: JobEvalResult, warnings: str = "") -> dict[str, Any]:
    """Nomad's JobRegisterResponse fields, shared by every job write that creates an evaluation."""
    return {
        "EvalID": ident(result.eval_id),
        "EvalCreateIndex": result.eval_create_index,
        "JobModifyIndex": result.job_modify_index,
        "Warnings": warnings,
        "Index": result.index,
    }


def job(row: Job, status: str) -> dict[str, Any]:
    """`status` is derived from the job's allocations and evaluations (store.derived_status)."""
    return {
        **row.spec,
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


def job_version(row: JobVersion, current: Job, status: str) -> dict[str, Any]:
    return {
        **row.spec,
        "Status": status,
        "Stable": row.stable,
        "Version": row.version,
        "VersionTag": row.version_tag,
        "SubmitTime": nanos(row.submit_time),
        "CreateIndex": current.create_index,
        "ModifyIndex": row.job_modify_index,
        "JobModifyIndex": row.job_modify_index,
    }


def job_summary(row: Job, groups: dict[str, dict[str, int]], children: dict[str, int]) -> dict[str, Any]:
    return {
        "JobID": row.id,
        "Namespace": row.namespace,
        "Summary": groups,
        "Children": children,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


def job_stub(row: Job, summary: dict[str, Any], status: str) -> dict[str, Any]:
    spec = row.spec
    return {
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
        "Status": status,
        "StatusDescription": row.status_description,
        "JobSummary": summary,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "JobModifyIndex": row.job_modify_index,
        "SubmitTime": nanos(row.submit_time),
        "Meta": spec.get("Meta") or {},
        "Version": row.version,
    }


def evaluation(row: Evaluation) -> dict[str, Any]:
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
        "Status": row.status,
        "StatusDescription": row.status_description,
        "Wait": row.wait_ns,
        "WaitUntil": row.wait_until.isoformat().replace("+00:00", "Z") if row.wait_until else None,
        "NextEval": ident(row.next_eval),
        "PreviousEval": ident(row.previous_eval),
        "BlockedEval": ident(row.blocked_eval),
        "FailedTGAllocs": row.failed_tg_allocs or None,
        "ClassEligibility": row.class_eligibility or None,
        "EscapedComputedClass": row.escaped_computed_class,
        "QuotaLimitReached": row.quota_limit_reached,
        "AnnotatePlan": row.annotate_plan,
        "QueuedAllocations": row.queued_allocations or None,
        "PlanAnnotations": row.plan_annotations,
        "SnapshotIndex": row.snapshot_index,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "CreateTime": nanos(row.create_time),
        "ModifyTime": nanos(row.modify_time),
        # corral's extension: a pending evaluation with a lease is in flight on a worker until
        # then (nanoseconds; 0 while queued or once finished). Claims take no state index.
        "LeaseExpiresAt": nanos(row.lease_expires_at),
    }


def allocation(row: Allocation, job_spec: dict[str, Any] | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {
        "ID": str(row.id),
        "Namespace": row.namespace,
        "EvalID": str(row.eval_id),
        "Name": row.name,
        "NodeID": str(row.node_id),
        "NodeName": row.node_name,
        "JobID": row.job_id,
        "JobVersion": row.job_version,
        "TaskGroup": row.task_group,
        "AllocatedResources": row.allocated_resources or None,
        # Nomad's (deprecated, still served) sum over the tasks: what the allocation holds on its node.
        "Resources": {"CPU": row.cpu, "MemoryMB": row.memory_mb, "DiskMB": row.disk_mb},
        "DesiredStatus": row.desired_status,
        "DesiredDescription": row.desired_description,
        "DesiredTransition": row.desired_transition,
        "ClientStatus": row.client_status,
        "ClientDescription": row.client_description,
        "TaskStates": row.task_states or None,
        "DeploymentID": ident(row.deployment_id),
        "DeploymentStatus": row.deployment_status,
        "FollowupEvalID": ident(row.followup_eval_id),
        "PreviousAllocation": ident(row.previous_allocation),
        "NextAllocation": ident(row.next_allocation),
        "RescheduleTracker": row.reschedule_tracker,
        "PreemptedAllocations": [str(a) for a in row.preempted_allocations] or None,
        "PreemptedByAllocation": ident(row.preempted_by_allocation),
        "Metrics": row.metrics or None,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
        "AllocModifyIndex": row.alloc_modify_index,
        "CreateTime": nanos(row.create_time),
        "ModifyTime": nanos(row.modify_time),
    }
    if job_spec is not None:
        body["Job"] = job_spec
    return body


def node(row: Node) -> dict[str, Any]:
    # The objects as the client sent them, with the amounts the columns hold merged in.
    resources = dict(row.node_resources)
    resources["Cpu"] = {**_object(resources.get("Cpu")), "CpuShares": row.cpu_shares}
    resources["Memory"] = {**_object(resources.get("Memory")), "MemoryMB": row.memory_mb}
    resources["Disk"] = {**_object(resources.get("Disk")), "DiskMB": row.disk_mb}
    reserved = dict(row.reserved_resources)
    reserved["Cpu"] = {**_object(reserved.get("Cpu")), "CpuShares": row.reserved_cpu}
    reserved["Memory"] = {**_object(reserved.get("Memory")), "MemoryMB": row.reserved_memory_mb}
    reserved["Disk"] = {**_object(reserved.get("Disk")), "DiskMB": row.reserved_disk_mb}
    reserved["Networks"] = {**_object(reserved.get("Networks")), "ReservedHostPorts": row.reserved_ports}
    return {
        **node_stub(row),
        "SecretID": "",
        "HTTPAddr": row.http_addr,
        "Attributes": row.attributes,
        "Meta": row.meta,
        "NodeResources": resources,
        "ReservedResources": reserved,
        "ComputedClass": row.computed_class,
        "DrainStrategy": row.drain_strategy,
        "StatusUpdatedAt": int(row.status_updated_at.timestamp()),
    }


def _object(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, dict) else {}


def node_stub(row: Node) -> dict[str, Any]:
    return {
        "ID": str(row.id),
        "Datacenter": row.datacenter,
        "Name": row.name,
        "NodeClass": row.node_class,
        "NodePool": row.node_pool,
        "Version": str(row.attributes.get("nomad.version", "")),
        "Address": str(row.attributes.get("unique.network.ip-address", "")),
        "Drain": row.drain,
        "SchedulingEligibility": row.scheduling_eligibility,
        "Status": row.status,
        "StatusDescription": row.status_description,
        "Drivers": row.drivers,
        "LastDrain": row.last_drain,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


def scheduler_config(row: SchedulerConfig) -> dict[str, Any]:
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
