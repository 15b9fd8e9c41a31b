"""Rules for the job, its groups and tasks; runs on a job whose defaults are filled in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from app.jobspec.defaults import (
    JOB_TYPES,
    LAUNCHABLE_TYPES,
    MIGRATABLE_TYPES,
    RESCHEDULABLE_TYPES,
    UPDATABLE_TYPES,
)
from app.jobspec.durations import format_duration
from app.jobspec.errors import FieldError, quote
from app.jobspec.model import (
    DisconnectStrategy,
    Job,
    NomadObject,
    ParameterizedJobConfig,
    ScalingPolicy,
    Task,
    TaskGroup,
)
from app.jobspec.rules.checks import (
    Problems,
    at_least,
    between,
    not_inherited,
    one_of,
    required,
    unique_names,
)
from app.jobspec.rules.constraints import check_affinities, check_constraints, check_spreads
from app.jobspec.rules.periodic import check_periodic
from app.jobspec.rules.policies import check_migrate, check_reschedule, check_restart, check_update
from app.jobspec.rules.resources import check_ephemeral_disk, check_networks, check_resources
from app.jobspec.rules.task_runtime import check_task_runtime, check_volumes
from app.jobspec.rules.templates import check_templates
from app.jobspec.services import check_group_services

MAX_ID_LENGTH = 128
# Nomad's job_max_count server default: no task group may ask for more allocations.
MAX_GROUP_COUNT = 50_000
PAYLOAD_MODES = ("optional", "required", "forbidden")
HORIZONTAL = "horizontal"  # the only scaling type a task group takes
LIFECYCLE_HOOKS = ("prestart", "poststart", "poststop")
RECONCILE_STRATEGIES = ("best_score", "keep_original", "keep_replacement", "longest_running")

Policy = TypeVar("Policy", bound=NomadObject)


@dataclass(frozen=True)
class _Gate:
    """A block that only some job types may carry."""

    name: str
    allowed_types: tuple[str, ...]


_UPDATE = _Gate("update block", UPDATABLE_TYPES)
_RESCHEDULE = _Gate("reschedule policy", RESCHEDULABLE_TYPES)
_MIGRATE = _Gate("migrate block", MIGRATABLE_TYPES)
_PERIODIC = _Gate("periodic block", LAUNCHABLE_TYPES)
_PARAMETERIZED = _Gate("parameterized block", LAUNCHABLE_TYPES)


def check_job(job: Job, *, type_trusted: bool = True) -> Problems:
    """Yield every rule violation in ``job``.

    ``type_trusted`` is false when the client's Type was unusable; rules that depend on
    the type are then skipped rather than judged against a type the client never chose.
    """
    yield from _check_id(job.id)
    yield from one_of(job.type, JOB_TYPES, "Job.Type")
    job_type = job.type if type_trusted and job.type in JOB_TYPES else None
    yield from between(job.priority, 1, 100, "Job.Priority")
    yield from _check_datacenters(job.datacenters)
    yield from check_constraints(job.constraints, "Job.Constraints")
    yield from check_affinities(job.affinities, "Job.Affinities")
    yield from check_spreads(job.spreads, "Job.Spreads")

    yield from _policy(job.update, _UPDATE, job_type, check_update, "Job.Update")
    yield from _policy(job.reschedule, _RESCHEDULE, job_type, check_reschedule, "Job.Reschedule")
    yield from _policy(job.migrate, _MIGRATE, job_type, check_migrate, "Job.Migrate")
    yield from _check_launch(job, job_type)

    if not job.task_groups:
        yield FieldError("Job.TaskGroups", "must contain at least one task group")
    yield from unique_names(
        ((group.name, f"Job.TaskGroups[{index}].Name") for index, group in enumerate(job.task_groups)),
        "within the job",
    )
    for index, group in enumerate(job.task_groups):
        yield from _check_group(group, f"Job.TaskGroups[{index}]", job, job_type)


def _check_id(job_id: str) -> Problems:
    path = "Job.ID"
    if not job_id:
        yield FieldError(path, "is required")
        return
    if " " in job_id:
        yield FieldError(path, "must not contain spaces")
    if "\x00" in job_id:
        yield FieldError(path, "must not contain null characters")
    if len(job_id) > MAX_ID_LENGTH:
        yield FieldError(path, f"must be at most {MAX_ID_LENGTH} characters, got {len(job_id)}")


def _check_datacenters(datacenters: list[str]) -> Problems:
    if not datacenters:
        yield FieldError("Job.Datacenters", "must contain at least one datacenter")
    for index, datacenter in enumerate(datacenters):
        if not datacenter:
            yield FieldError(f"Job.Datacenters[{index}]", "must not be empty")


def _check_launch(job: Job, job_type: str | None) -> Problems:
    yield from _policy(job.periodic, _PERIODIC, job_type, check_periodic, "Job.Periodic")
    yield from _policy(
        job.parameterized_job,
        _PARAMETERIZED,
        job_type,
        _check_parameterized,
        "Job.ParameterizedJob",
    )
    if job.periodic is not None and job.parameterized_job is not None:
        yield FieldError("Job.Periodic", "cannot be combined with ParameterizedJob")


def _check_parameterized(config: ParameterizedJobConfig, path: str) -> Problems:
    yield from one_of(config.payload, PAYLOAD_MODES, f"{path}.Payload")


def check_path_safe_name(name: str, path: str) -> Problems:
    """Group and task names become directory names on the client: nothing that can leave
    the allocation directory or hide in a terminal (Nomad refuses ``/`` and ``\\`` too)."""
    if "/" in name or "\\" in name:
        yield FieldError(path, f"must not contain a slash or backslash, got {quote(name)}")
    if ".." in name:
        yield FieldError(path, f'must not contain "..", got {quote(name)}')
    if any(ord(char) < 0x20 or 0x7F <= ord(char) < 0xA0 for char in name):
        yield FieldError(path, f"must not contain NUL or control characters, got {quote(name)}")


def _check_group(group: TaskGroup, path: str, job: Job, job_type: str | None) -> Problems:
    yield from required(group.name, f"{path}.Name")
    yield from check_path_safe_name(group.name, f"{path}.Name")
    yield from _check_disconnect(group, path)
    yield from at_least(group.count, 0, f"{path}.Count")
    if group.count > MAX_GROUP_COUNT:
        yield FieldError(
            f"{path}.Count", f"must be at most {MAX_GROUP_COUNT} (Nomad's job_max_count), got {group.count}"
        )
    if group.scaling is not None:
        yield from check_scaling(group.scaling, group.count, path)
    yield from check_constraints(group.constraints, f"{path}.Constraints")
    yield from check_affinities(group.affinities, f"{path}.Affinities")
    yield from check_spreads(group.spreads, f"{path}.Spreads")
    yield from check_networks(group.networks, f"{path}.Networks")
    yield from check_ephemeral_disk(group.ephemeral_disk, f"{path}.EphemeralDisk")
    update = group.update or job.update
    canaries = update.canary if update is not None else 0
    yield from check_volumes(group, path, job_type or "service", canaries)
    if group.restart_policy is not None:
        yield from check_restart(group.restart_policy, f"{path}.RestartPolicy")
    yield from _policy(
        group.update,
        _UPDATE,
        job_type,
        check_update,
        f"{path}.Update",
        inherited=(job.update, "Job.Update"),
    )
    yield from _policy(
        group.reschedule_policy,
        _RESCHEDULE,
        job_type,
        check_reschedule,
        f"{path}.ReschedulePolicy",
        inherited=(job.reschedule, "Job.Reschedule"),
    )
    yield from _policy(
        group.migrate,
        _MIGRATE,
        job_type,
        check_migrate,
        f"{path}.Migrate",
        inherited=(job.migrate, "Job.Migrate"),
    )

    if not group.tasks:
        yield FieldError(f"{path}.Tasks", "must contain at least one task")
    yield from unique_names(
        ((task.name, f"{path}.Tasks[{index}].Name") for index, task in enumerate(group.tasks)),
        "within the group",
    )
    for index, task in enumerate(group.tasks):
        yield from _check_task(task, f"{path}.Tasks[{index}]", group, f"{path}.RestartPolicy")
    yield from check_group_services(group, path)


def check_scaling(scaling: ScalingPolicy, count: int, group_path: str) -> Problems:
    """Nomad's ScalingPolicy.Validate for a group: 0 <= Min <= Max, and Count within them."""
    path = f"{group_path}.Scaling"
    yield from one_of(scaling.type, (HORIZONTAL,), f"{path}.Type")
    if scaling.max is None:
        yield FieldError(f"{path}.Max", "is required")
    else:
        yield from at_least(scaling.max, 0, f"{path}.Max")
    if scaling.min is not None:
        yield from at_least(scaling.min, 0, f"{path}.Min")
    if scaling.min is not None and scaling.max is not None and scaling.max < scaling.min:
        yield FieldError(f"{path}.Max", f"must not be less than Min ({scaling.min}), got {scaling.max}")
    if scaling.min is not None and count < scaling.min:
        yield FieldError(f"{group_path}.Count", f"must not be less than the scaling minimum {scaling.min}, got {count}")
    if scaling.max is not None and count > scaling.max:
        yield FieldError(f"{group_path}.Count", f"must not be more than the scaling maximum {scaling.max}, got {count}")


def _check_disconnect(group: TaskGroup, path: str) -> Problems:
    for name, value in (
        ("MaxClientDisconnect", group.max_client_disconnect),
        ("StopAfterClientDisconnect", group.stop_after_client_disconnect),
        ("ShutdownDelay", group.shutdown_delay),
    ):
        if value is not None:
            yield from _not_negative_duration(value, f"{path}.{name}")
    block: DisconnectStrategy | None = group.disconnect
    if block is None:
        return
    for name, value in (("LostAfter", block.lost_after), ("StopOnClientAfter", block.stop_on_client_after)):
        if value is not None:
            yield from _not_negative_duration(value, f"{path}.Disconnect.{name}")
    if block.reconcile is not None:
        yield from one_of(block.reconcile, RECONCILE_STRATEGIES, f"{path}.Disconnect.Reconcile")
    if block.lost_after and group.max_client_disconnect:
        yield FieldError(f"{path}.MaxClientDisconnect", "cannot be combined with Disconnect.LostAfter")


def _not_negative_duration(value: int, path: str) -> Problems:
    if value < 0:
        yield FieldError(path, f"must not be negative, got {format_duration(value)}")


def _check_task(task: Task, path: str, group: TaskGroup, group_restart_path: str) -> Problems:
    yield from required(task.name, f"{path}.Name")
    yield from check_path_safe_name(task.name, f"{path}.Name")
    yield from required(task.driver, f"{path}.Driver")
    yield from _not_negative_duration(task.kill_timeout, f"{path}.KillTimeout")
    yield from _not_negative_duration(task.shutdown_delay, f"{path}.ShutdownDelay")
    if task.lifecycle is not None:
        yield from one_of(task.lifecycle.hook, LIFECYCLE_HOOKS, f"{path}.Lifecycle.Hook")
    if task.dispatch_payload is not None:
        yield from _check_payload_file(task.dispatch_payload.file, f"{path}.DispatchPayload.File")
    yield from check_constraints(task.constraints, f"{path}.Constraints")
    yield from check_affinities(task.affinities, f"{path}.Affinities")
    yield from check_resources(task.resources, f"{path}.Resources")
    yield from check_templates(task.templates or [], path)
    yield from check_task_runtime(task, group, group.ephemeral_disk.size_mb, path)
    yield from _inheriting(
        task.restart_policy,
        check_restart,
        f"{path}.RestartPolicy",
        (group.restart_policy, group_restart_path),
    )


def _check_payload_file(file: str, path: str) -> Problems:
    """The payload is written under the task's ``local/``: a relative path that stays there."""
    if not file:
        yield FieldError(path, "is required")
    elif file.startswith(("/", "\\")) or ".." in file.replace("\\", "/").split("/") or "\x00" in file:
        yield FieldError(path, f"must be a relative path inside the task's local/ directory, got {quote(file)}")


def _policy(
    block: Policy | None,
    gate: _Gate,
    job_type: str | None,
    check: Callable[[Policy, str], Problems],
    path: str,
    inherited: tuple[Policy | None, str] = (None, ""),
) -> Problems:
    """Check a policy block that only some job types may carry."""
    if block is None:
        return
    if not _allowed(gate.allowed_types, job_type):
        yield FieldError(path, f"{gate.name} is not allowed for {job_type} jobs")
        return
    yield from _inheriting(block, check, path, inherited)


def _inheriting(
    block: Policy | None,
    check: Callable[[Policy, str], Problems],
    path: str,
    inherited: tuple[Policy | None, str],
) -> Problems:
    """Check ``block``, leaving out what is already reported for the block it merged in."""
    if block is None:
        return
    parent, parent_path = inherited
    parent_problems = check(parent, parent_path) if parent is not None else iter(())
    yield from not_inherited(check(block, path), path, parent_problems, parent_path)


def _allowed(allowed_types: tuple[str, ...], job_type: str | None) -> bool:
    # An untrusted type allows everything so that only the type itself is reported.
    return job_type is None or job_type in allowed_types
