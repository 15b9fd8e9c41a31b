"""Defaults that depend on the job type or on other fields, applied as Nomad does.

Type-independent defaults are plain field defaults in ``model.py``.
"""

from __future__ import annotations

from typing import TypeVar

from app.jobspec.durations import HOUR, MINUTE, SECOND
from app.jobspec.model import (
    Job,
    MigrateStrategy,
    NomadObject,
    ReschedulePolicy,
    RestartPolicy,
    Task,
    TaskGroup,
    UpdateStrategy,
    overlay,
)
from app.jobspec.services import canonicalize_services

SERVICE = "service"
BATCH = "batch"
SYSTEM = "system"
SYSBATCH = "sysbatch"
JOB_TYPES = (SERVICE, BATCH, SYSTEM, SYSBATCH)

# Job types whose groups roll out through an update block / get rescheduled / migrate.
UPDATABLE_TYPES = (SERVICE, SYSTEM)
RESCHEDULABLE_TYPES = (SERVICE, BATCH)
MIGRATABLE_TYPES = (SERVICE,)
# Job types that are launched by a timer or by dispatch rather than kept running.
LAUNCHABLE_TYPES = (BATCH, SYSBATCH)

Block = TypeVar("Block", bound=NomadObject)


def _restart_defaults(job_type: str) -> RestartPolicy:
    # Long-running types retry a few times in a short window; run-to-completion types
    # are given a day.
    if job_type in (SERVICE, SYSTEM):
        return RestartPolicy.model_validate(
            {"Attempts": 2, "Interval": 30 * MINUTE, "Delay": 15 * SECOND, "Mode": "fail"}
        )
    return RestartPolicy.model_validate({"Attempts": 3, "Interval": 24 * HOUR, "Delay": 15 * SECOND, "Mode": "fail"})


def _reschedule_defaults(job_type: str) -> ReschedulePolicy:
    if job_type == BATCH:
        return ReschedulePolicy.model_validate(
            {
                "Attempts": 1,
                "Interval": 24 * HOUR,
                "Delay": 5 * SECOND,
                "DelayFunction": "constant",
                "MaxDelay": 0,
                "Unlimited": False,
            }
        )
    return ReschedulePolicy.model_validate(
        {
            "Attempts": 0,
            "Interval": 0,
            "Delay": 30 * SECOND,
            "DelayFunction": "exponential",
            "MaxDelay": HOUR,
            "Unlimited": True,
        }
    )


def apply_defaults(job: Job) -> Job:
    """Return a copy of ``job`` with every default Nomad would fill in."""
    job = job.model_copy(deep=True)
    # An invalid type is reported by the rules; defaults then follow Nomad's own default.
    job_type = job.type if job.type in JOB_TYPES else SERVICE
    if job.name is None:
        job.name = job.id
    if job.update is None and job_type == SERVICE:
        job.update = UpdateStrategy()
    # Job-level policies are canonicalised first so that the output is complete and a
    # second normalisation merges the very same values into the groups.
    if job.reschedule is not None and job_type in RESCHEDULABLE_TYPES:
        job.reschedule = overlay(_reschedule_defaults(job_type), job.reschedule)
    # Nomad reads an empty time zone as UTC; spelling it out keeps the output explicit.
    if job.periodic is not None and not job.periodic.time_zone:
        job.periodic.time_zone = "UTC"
    for group in job.task_groups:
        _group_defaults(group, job, job_type)
    canonicalize_services(job)
    return job


def _group_defaults(group: TaskGroup, job: Job, job_type: str) -> None:
    if job_type in UPDATABLE_TYPES and job.update is not None:
        group.update = _merged(job.update, group.update)

    group.restart_policy = _merged(_restart_defaults(job_type), group.restart_policy)

    if job_type in RESCHEDULABLE_TYPES:
        group.reschedule_policy = _merged(job.reschedule or _reschedule_defaults(job_type), group.reschedule_policy)

    if job_type in MIGRATABLE_TYPES:
        group.migrate = _merged(job.migrate or MigrateStrategy(), group.migrate)

    # Nomad's ScalingPolicy.Canonicalize: an unset minimum is the group's count.
    if group.scaling is not None and group.scaling.min is None:
        group.scaling.min = group.count

    for task in group.tasks:
        _task_defaults(task, group)


def _task_defaults(task: Task, group: TaskGroup) -> None:
    if group.restart_policy is not None:
        task.restart_policy = _merged(group.restart_policy, task.restart_policy)
    resources = task.resources
    # Asking for whole cores replaces the CPU share; Nomad then leaves CPU at zero
    # unless the client set it (which the rules reject).
    if resources.cores > 0 and "cpu" not in resources.explicit_fields():
        resources.cpu = 0


def _merged(inherited: Block, own: Block | None) -> Block:
    """The block a group or task ends up with: its own settings over the inherited ones."""
    return inherited.model_copy(deep=True) if own is None else overlay(inherited, own)
