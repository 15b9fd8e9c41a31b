"""Building the allocations a plan creates."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator

from app.scheduler.cores import with_cores
from app.structs import Allocation, AnyMetrics, ClaimedVolume, Job, Node, Port, TaskCores, TaskGroup
from app.wire.allocation import RescheduleTrackerJson


def alloc_name(job: Job, group: TaskGroup, index: int) -> str:
    return f"{job.id}.{group.name}[{index}]"


def free_indexes(used: Iterable[int]) -> Iterator[int]:
    """The lowest indexes not in use, in order."""
    taken = set(used)
    index = 0
    while True:
        if index not in taken:
            yield index
        index += 1


def index_of(alloc: Allocation) -> int:
    """The name's index, or -1 for a malformed name (never reused, stopped last)."""
    try:
        return alloc.index
    except ValueError:
        return -1


def new_allocation(
    *,
    alloc_id: uuid.UUID,
    job: Job,
    group: TaskGroup,
    name: str,
    node: Node,
    eval_id: uuid.UUID,
    ports: tuple[Port, ...],
    previous: Allocation | None = None,
    reschedule_tracker: RescheduleTrackerJson | None = None,
    preempted: tuple[uuid.UUID, ...] = (),
    metrics: AnyMetrics | None = None,
    task_cores: tuple[TaskCores, ...] = (),
) -> Allocation:
    claims = sticky_claims(job, group, node)
    return Allocation(
        id=alloc_id,
        namespace=job.namespace,
        job_id=job.id,
        job_version=job.version,
        task_group=group.name,
        name=name,
        node_id=node.id,
        node_name=node.name,
        eval_id=eval_id,
        desired_status="run",
        client_status="pending",
        resources=with_cores(group.resources, task_cores),
        ports=ports,
        previous_allocation=previous.id if previous else None,
        reschedule_tracker=reschedule_tracker,
        preempted_allocations=preempted,
        metrics=metrics,
        task_cores=task_cores,
        claims=claims,
    )


def sticky_claims(job: Job, group: TaskGroup, node: Node) -> tuple[ClaimedVolume, ...]:
    """The dynamic host volumes a new allocation of the group claims on `node`: those of its
    sticky volume blocks (Nomad's updateStickyVolumeClaimsFromAlloc)."""
    claims = []
    for ask in group.host_volumes:
        volume_id = node.dynamic_host_volumes.get((job.namespace, ask.source)) if ask.sticky else None
        if volume_id is not None:
            claims.append(ClaimedVolume(volume_id, ask.source))
    return tuple(claims)
