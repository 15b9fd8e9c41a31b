"""A job as the scheduler reads it, built from its stored specification."""

from __future__ import annotations

from dataclasses import dataclass

from app.structs import job_spec
from app.structs.groups import Affinity, Constraint, Spread, TaskGroup
from app.wire.job import JobSpec, JobType


@dataclass(frozen=True)
class Job:
    namespace: str
    id: str
    name: str
    type: JobType
    priority: int
    datacenters: tuple[str, ...]
    node_pool: str
    task_groups: tuple[TaskGroup, ...]
    constraints: tuple[Constraint, ...] = ()
    affinities: tuple[Affinity, ...] = ()
    spreads: tuple[Spread, ...] = ()
    all_at_once: bool = False
    stop: bool = False
    version: int = 0
    job_modify_index: int = 0
    create_index: int = 0
    # A periodic or parameterized parent: it only launches child jobs and never runs anything.
    launches_children: bool = False

    @classmethod
    def from_spec(cls, spec: JobSpec, *, version: int = 0, job_modify_index: int = 0, create_index: int = 0) -> Job:
        """Build from a normalized Nomad job specification (app.jobspec.normalize_job output)."""
        return cls(
            namespace=spec["Namespace"],
            id=spec["ID"],
            name=spec.get("Name") or spec["ID"],
            type=spec["Type"],
            priority=spec["Priority"],
            datacenters=tuple(spec.get("Datacenters") or ()),
            node_pool=spec["NodePool"],
            task_groups=tuple(job_spec.task_group(g) for g in spec.get("TaskGroups") or ()),
            constraints=job_spec.constraints(spec.get("Constraints")),
            affinities=job_spec.affinities(spec.get("Affinities")),
            spreads=job_spec.spreads(spec.get("Spreads")),
            all_at_once=bool(spec.get("AllAtOnce", False)),
            stop=bool(spec.get("Stop", False)),
            version=version,
            job_modify_index=job_modify_index,
            create_index=create_index,
            launches_children=launches_children(spec),
        )

    def group(self, name: str) -> TaskGroup | None:
        return next((g for g in self.task_groups if g.name == name), None)


def launches_children(spec: JobSpec) -> bool:
    """Nomad's IsPeriodic() or IsParameterized(): a periodic block (enabled or not), or a
    parameterized block on a job that was not itself dispatched."""
    if spec.get("Periodic") is not None:
        return True
    return spec.get("ParameterizedJob") is not None and not spec.get("Dispatched", False)
