"""In-place versus destructive updates: what may change under a running allocation."""

from __future__ import annotations

from app.structs import Task, TaskGroup


def destructive(old: TaskGroup, new: TaskGroup) -> bool:
    """Nomad's tasksUpdated, over the fields corral models: anything that changes what runs
    or what it reserves needs a new allocation; the rest (count, constraints, policies...)
    can be applied to the running one."""
    if old.ephemeral_disk_mb != new.ephemeral_disk_mb or old.networks != new.networks:
        return True
    if len(old.tasks) != len(new.tasks):
        return True
    old_tasks = {t.name: t for t in old.tasks}
    return any(t.name not in old_tasks or _task_changed(old_tasks[t.name], t) for t in new.tasks)


def _task_changed(old: Task, new: Task) -> bool:
    return (
        old.driver != new.driver
        or old.config != new.config
        or old.env != new.env
        or old.meta != new.meta
        or old.resources != new.resources
        or old.cores != new.cores
    )
