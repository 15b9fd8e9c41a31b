"""Jobs and their versions to Nomad's JSON shapes: the Job, a version of it, its summary and
list stub, and the answer of a job write that creates an evaluation."""

from __future__ import annotations

import uuid
from typing import Protocol

from app.api.encoders.encode import ident, nanos
from app.jobspec.canonical import canonical_job
from app.models import Job, JobVersion
from app.store.job.job_reads import JobListed
from app.values.constants import job_status
from app.wire.api.api_jobs import JobEvalAnswerJson
from app.wire.job import (
    JobChildrenSummaryJson,
    JobListStubJson,
    JobSummaryJson,
    JobVersionTagSpec,
    TaskGroupSummaryJson,
)
from app.wire.json import JsonObject


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


def job_summary(
    row: Job | JobListed, groups: dict[str, TaskGroupSummaryJson], children: JobChildrenSummaryJson
) -> JobSummaryJson:
    return {
        "JobID": row.id,
        "Namespace": row.namespace,
        "Summary": groups,
        "Children": children,
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


def job_stub(row: Job | JobListed, summary: JobSummaryJson, status: str) -> JobListStubJson:
    """Nomad's JobListStub (every key; the job's version is on the full job only)."""
    if isinstance(row, JobListed):
        multiregion, meta = row.multiregion, row.meta
    else:
        multiregion, meta = row.spec.get("Multiregion"), row.spec.get("Meta")
    stub: JobListStubJson = {
        "ID": row.id,
        "ParentID": row.parent_id or "",
        "Name": row.name,
        "Namespace": row.namespace,
        "Datacenters": row.datacenters,
        "NodePool": row.node_pool,
        "Multiregion": multiregion,
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
    if meta:
        stub["Meta"] = meta
    return stub
