"""Nomad's job diff (`JobDiff`) between the registered specification and a proposed one, as
`job plan` returns it: changed fields as strings, nested blocks as objects, task groups and
tasks matched by name. Unchanged fields are left out (Nomad's non-contextual diff)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import TypeVar

from app.wire.job import FieldDiffJson, JobDiffJson, ObjectDiffJson, TaskDiffJson, TaskGroupDiffJson

ADDED, DELETED, EDITED, NONE = "Added", "Deleted", "Edited", "None"
# Fields the servers own; they never count as a change of the specification.
IGNORED = frozenset(
    {"Status", "StatusDescription", "Stable", "Version", "SubmitTime", "CreateIndex", "ModifyIndex", "JobModifyIndex"}
)
Spec = Mapping[str, object]  # a job, group, task or block: compared as plain JSON
Diff = TypeVar("Diff", TaskGroupDiffJson, TaskDiffJson)


def job_diff(old: Spec | None, new: Spec | None) -> JobDiffJson:
    """The diff of two normalized job specifications (None: the job does not exist on that side)."""
    fields, objects = _block(old or {}, new or {}, skip=IGNORED | {"TaskGroups"})
    groups = _named(_groups(old), _groups(new), _group_diff)
    return {
        "Type": _kind(old, new, bool(fields or objects or groups)),
        "ID": str((new or old or {}).get("ID", "")),
        "Fields": fields or None,
        "Objects": objects or None,
        "TaskGroups": groups or None,
    }


def _kind(old: object | None, new: object | None, changed: bool) -> str:
    if old is None or old == {}:
        return ADDED
    if new is None or new == {}:
        return DELETED
    return EDITED if changed else NONE


def _groups(spec: Spec | None) -> dict[str, Spec]:
    return _by_name((spec or {}).get("TaskGroups"))


def _group_diff(name: str, old: Spec | None, new: Spec | None) -> TaskGroupDiffJson | None:
    fields, objects = _block(old or {}, new or {}, skip=frozenset({"Tasks", "Name"}))
    tasks = _named(_tasks(old), _tasks(new), _task_diff)
    kind = _kind(old, new, bool(fields or objects or tasks))
    if kind == NONE:
        return None
    return {"Type": kind, "Name": name, "Fields": fields or None, "Objects": objects or None, "Tasks": tasks or None}


def _tasks(group: Spec | None) -> dict[str, Spec]:
    return _by_name((group or {}).get("Tasks"))


def _by_name(items: object) -> dict[str, Spec]:
    """Groups or tasks by name (a stored list of objects, each with its Name)."""
    if not isinstance(items, list):
        return {}
    return {str(item["Name"]): item for item in items if isinstance(item, Mapping)}


def _task_diff(name: str, old: Spec | None, new: Spec | None) -> TaskDiffJson | None:
    fields, objects = _block(old or {}, new or {}, skip=frozenset({"Name"}))
    kind = _kind(old, new, bool(fields or objects))
    if kind == NONE:
        return None
    return {
        "Type": kind,
        "Name": name,
        "Fields": fields or None,
        "Objects": objects or None,
        "Annotations": [_task_annotation(kind, fields, objects)],
    }


def _task_annotation(kind: str, fields: list[FieldDiffJson], objects: list[ObjectDiffJson]) -> str:
    """Nomad's hint of what the change does to running allocations."""
    if kind == ADDED:
        return "forces create"
    if kind == DELETED:
        return "forces destroy"
    in_place = {"KillTimeout", "Leader", "ShutdownDelay", "KillSignal", "LogConfig", "Services", "RestartPolicy"}
    if all(f["Name"] in in_place for f in fields) and all(o["Name"] in in_place for o in objects):
        return "forces in-place update"
    return "forces create/destroy update"


def _named(
    old: Mapping[str, Spec], new: Mapping[str, Spec], diff: Callable[[str, Spec | None, Spec | None], Diff | None]
) -> list[Diff]:
    out = [diff(name, old.get(name), new.get(name)) for name in sorted({*old, *new})]
    return [d for d in out if d is not None]


def _block(old: Spec, new: Spec, skip: frozenset[str]) -> tuple[list[FieldDiffJson], list[ObjectDiffJson]]:
    """Scalar fields and nested objects that differ between two JSON objects."""
    fields: list[FieldDiffJson] = []
    objects: list[ObjectDiffJson] = []
    for key in sorted({*old, *new} - skip):
        a, b = old.get(key), new.get(key)
        if a == b:
            continue
        if isinstance(a, Mapping) or isinstance(b, Mapping):
            objects.append(_object(key, a if isinstance(a, Mapping) else None, b if isinstance(b, Mapping) else None))
        elif _is_object_list(a) or _is_object_list(b):
            objects.extend(_object_list(key, _list(a), _list(b)))
        elif isinstance(a, list) or isinstance(b, list):
            fields.extend(_scalar_list(key, _list(a), _list(b)))
        else:
            fields.append(_field(key, a, b))
    return fields, objects


def _object(name: str, old: Spec | None, new: Spec | None) -> ObjectDiffJson:
    fields, objects = _block(old or {}, new or {}, skip=frozenset())
    return {"Type": _kind(old, new, True), "Name": name, "Fields": fields or None, "Objects": objects or None}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _mapping(value: object) -> Spec | None:
    return value if isinstance(value, Mapping) else None


def _is_object_list(value: object) -> bool:
    return isinstance(value, list) and any(isinstance(v, Mapping) for v in value)


def _object_list(name: str, old: list[object], new: list[object]) -> Iterable[ObjectDiffJson]:
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        if a != b:
            yield _object(name, _mapping(a), _mapping(b))


def _scalar_list(name: str, old: list[object], new: list[object]) -> Iterable[FieldDiffJson]:
    """Set semantics, as Nomad diffs Datacenters and similar string lists."""
    before, after = [_text(v) for v in old], [_text(v) for v in new]
    for value in sorted(set(before) - set(after)):
        yield {"Type": DELETED, "Name": name, "Old": value, "New": "", "Annotations": None}
    for value in sorted(set(after) - set(before)):
        yield {"Type": ADDED, "Name": name, "Old": "", "New": value, "Annotations": None}


def _field(name: str, old: object, new: object) -> FieldDiffJson:
    kind = ADDED if old is None else DELETED if new is None else EDITED
    return {"Type": kind, "Name": name, "Old": _text(old), "New": _text(new), "Annotations": None}


def _text(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
