"""Whole cores (`resources { cores = N }`, Nomad's ReservedCores): which of a node's cores a
placement takes, and the CPU they count for. Pure and deterministic: the lowest free IDs."""

from __future__ import annotations

from collections.abc import Sequence

from app.structs import Node, NodeUsage, Resources, TaskCores


def pick_cores(node: Node, usage: NodeUsage, asks: Sequence[tuple[str, int]]) -> tuple[TaskCores, ...] | None:
    """The cores each asking task gets on `node` beside what `usage` holds, each task's CPU
    being its cores times the node's MHz per core; None when too few cores are free."""
    if not asks:
        return ()
    free = [core for core in node.core_ids if core not in usage.cores]
    if sum(count for _, count in asks) > len(free):
        return None
    mhz, taken, start = node.mhz_per_core, [], 0
    for task, count in asks:
        taken.append(TaskCores(task, tuple(free[start : start + count]), count * mhz))
        start += count
    return tuple(taken)


def cores_cpu(task_cores: Sequence[TaskCores]) -> int:
    return sum(t.cpu for t in task_cores)


def with_cores(resources: Resources, task_cores: Sequence[TaskCores]) -> Resources:
    """A group's resources with its cores' CPU added (the group's CPU leaves them out: it
    depends on the node)."""
    return resources + Resources(cpu=cores_cpu(task_cores)) if task_cores else resources


def all_cores(task_cores: Sequence[TaskCores]) -> tuple[int, ...]:
    return tuple(core for t in task_cores for core in t.cores)
