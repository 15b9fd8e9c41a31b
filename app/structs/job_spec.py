"""A job's parts built from its normalized Nomad specification (app.jobspec.normalize_job
output): Nomad's JSON keys in, the frozen structs of app.structs.groups out. Job.from_spec
assembles the job from them."""

from __future__ import annotations

from collections.abc import Mapping

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
from app.structs.resources import Port, Resources
from app.wire.job import AffinitySpec, ConstraintSpec, PortSpec, SpreadSpec, TaskGroupSpec, TaskSpec


def constraints(raw: list[ConstraintSpec] | None) -> tuple[Constraint, ...]:
    return tuple(Constraint(c.get("LTarget", ""), c.get("Operand", "="), c.get("RTarget", "")) for c in raw or ())


def affinities(raw: list[AffinitySpec] | None) -> tuple[Affinity, ...]:
    return tuple(
        Affinity(a.get("LTarget", ""), a.get("Operand", "="), a.get("RTarget", ""), a.get("Weight", 50))
        for a in raw or ()
    )


def spreads(raw: list[SpreadSpec] | None) -> tuple[Spread, ...]:
    return tuple(
        Spread(
            s["Attribute"],
            s.get("Weight", 50),
            tuple(SpreadTarget(t["Value"], t["Percent"]) for t in s.get("SpreadTarget") or ()),
        )
        for s in raw or ()
    )


def _ports(raw: list[PortSpec] | None) -> tuple[Port, ...]:
    return tuple(
        Port(p["Label"], p.get("Value", 0), p.get("To", 0), p.get("HostNetwork", "default")) for p in raw or ()
    )


def _task(raw: TaskSpec) -> Task:
    res = raw.get("Resources") or {}
    return Task(
        name=raw["Name"],
        driver=raw["Driver"],
        resources=Resources(
            cpu=res.get("CPU", 0),
            memory_mb=res.get("MemoryMB", 0),
            memory_max_mb=res.get("MemoryMaxMB") or res.get("MemoryMB", 0),
        ),
        constraints=constraints(raw.get("Constraints")),
        affinities=affinities(raw.get("Affinities")),
        config=raw.get("Config") or {},
        env=raw.get("Env") or {},
        meta=raw.get("Meta") or {},
        cores=int(res.get("Cores") or 0),
    )


def _disconnect(raw: TaskGroupSpec) -> DisconnectStrategy | None:
    block = raw.get("Disconnect") or {}
    lost_after = block.get("LostAfter") or raw.get("MaxClientDisconnect") or 0
    if not lost_after:
        return None
    replace = block.get("Replace")
    return DisconnectStrategy(
        int(lost_after), True if replace is None else bool(replace), block.get("Reconcile") or "best_score"
    )


def host_volumes(raw: object) -> tuple[HostVolumeAsk, ...]:
    """The group's host volume requests (CSI volumes are not placed on: they are warned)."""
    volumes = raw.values() if isinstance(raw, Mapping) else ()
    return tuple(
        HostVolumeAsk(
            str(v.get("Source") or ""), bool(v.get("ReadOnly")), bool(v.get("Sticky")), bool(v.get("PerAlloc"))
        )
        for v in volumes
        if isinstance(v, Mapping) and v.get("Type") == "host"
    )


def task_group(raw: TaskGroupSpec) -> TaskGroup:
    update, resched = raw.get("Update"), raw.get("ReschedulePolicy")
    return TaskGroup(
        disconnect=_disconnect(raw),
        host_volumes=host_volumes(raw.get("Volumes")),
        name=raw["Name"],
        count=raw.get("Count", 1),
        tasks=tuple(_task(t) for t in raw.get("Tasks") or ()),
        ephemeral_disk_mb=(raw.get("EphemeralDisk") or {}).get("SizeMB", 0),
        constraints=constraints(raw.get("Constraints")),
        affinities=affinities(raw.get("Affinities")),
        spreads=spreads(raw.get("Spreads")),
        networks=tuple(
            NetworkAsk(n.get("Mode", "host"), _ports(n.get("ReservedPorts")), _ports(n.get("DynamicPorts")))
            for n in raw.get("Networks") or ()
        ),
        update=None
        if update is None
        else UpdateStrategy(
            max_parallel=update["MaxParallel"],
            health_check=update["HealthCheck"],
            min_healthy_time_ns=update["MinHealthyTime"],
            healthy_deadline_ns=update["HealthyDeadline"],
            progress_deadline_ns=update["ProgressDeadline"],
            auto_revert=update["AutoRevert"],
            auto_promote=update["AutoPromote"],
            canary=update["Canary"],
            stagger_ns=update["Stagger"],
        ),
        reschedule=None
        if resched is None
        else ReschedulePolicy(
            attempts=resched["Attempts"],
            interval_ns=resched["Interval"],
            delay_ns=resched["Delay"],
            delay_function=resched["DelayFunction"],
            max_delay_ns=resched["MaxDelay"],
            unlimited=resched["Unlimited"],
        ),
    )
