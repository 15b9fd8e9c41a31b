"""Nomad's job diff (`JobDiff`) between the registered specification and a proposed one, as
`job plan` returns it: changed fields as strings, nested blocks as objects, task groups and
tasks matched by name. Unchanged fields are left out, but for the contextual diff Nomad's plan
and version history always ask for: an edited nested block (Resources, Config, a service...) then
lists its unchanged fields too, with Type "None", so a reader sees each change in its block. The
job's, groups' and tasks' own fields stay changes only, as in Nomad (its Job/TaskGroup/Task Diff
pass contextual only to the objects inside). As in Nomad, every task group and task is listed,
an unchanged one with Type "None", and string maps (Meta, a task's Env) are flattened into
fields named `Meta[key]` (Nomad's flatmap), not nested objects."""

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
# Nomad's map[string]string fields: flatmap makes each key a field of its own.
FLAT_MAPS = frozenset({"Meta", "Env"})


def job_diff(old: Spec | None, new: Spec | None, *, contextual: bool = False) -> JobDiffJson:
    """The diff of two normalized job specifications (None: the job does not exist on that side);
    `contextual` keeps the unchanged fields of each edited nested block (module docstring)."""
    fields, objects = _block(old or {}, new or {}, IGNORED | {"TaskGroups"}, contextual)
    groups = _named(_groups(old), _groups(new), contextual, _group_diff)
    return {
        "Type": _kind(old, new, bool(fields or objects or any(g["Type"] != NONE for g in groups))),
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


def _group_diff(name: str, old: Spec | None, new: Spec | None, contextual: bool) -> TaskGroupDiffJson:
    fields, objects = _block(old or {}, new or {}, frozenset({"Tasks", "Name"}), contextual)
    tasks = _named(_tasks(old), _tasks(new), contextual, _task_diff)
    changed = bool(fields or objects or any(t["Type"] != NONE for t in tasks))
    kind = _kind(old, new, changed)
    return {"Type": kind, "Name": name, "Fields": fields or None, "Objects": objects or None, "Tasks": tasks or None}


def _tasks(group: Spec | None) -> dict[str, Spec]:
    return _by_name((group or {}).get("Tasks"))


def _by_name(items: object) -> dict[str, Spec]:
    """Groups or tasks by name (a stored list of objects, each with its Name)."""
    if not isinstance(items, list):
        return {}
    return {str(item["Name"]): item for item in items if isinstance(item, Mapping)}


def _task_diff(name: str, old: Spec | None, new: Spec | None, contextual: bool) -> TaskDiffJson:
    fields, objects = _block(old or {}, new or {}, frozenset({"Name"}), contextual)
    kind = _kind(old, new, bool(fields or objects))
    return {
        "Type": kind,
        "Name": name,
        "Fields": fields or None,
        "Objects": objects or None,
        "Annotations": None if kind == NONE else [_task_annotation(kind, fields, objects)],
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
    old: Mapping[str, Spec],
    new: Mapping[str, Spec],
    contextual: bool,
    diff: Callable[[str, Spec | None, Spec | None, bool], Diff],
) -> list[Diff]:
    """Every name on either side, unchanged ones too (Type None), as Nomad lists them."""
    return [diff(name, old.get(name), new.get(name), contextual) for name in sorted({*old, *new})]


def _block(
    old: Spec, new: Spec, skip: frozenset[str], contextual: bool, *, keep_unchanged: bool = False
) -> tuple[list[FieldDiffJson], list[ObjectDiffJson]]:
    """Scalar fields and nested objects that differ between two JSON objects; with
    `keep_unchanged`, equal scalar fields too (Type None). `contextual` is passed to the nested
    objects, which keep their unchanged fields when it is set."""
    fields: list[FieldDiffJson] = []
    objects: list[ObjectDiffJson] = []
    for key in sorted({*old, *new} - skip):
        a, b = old.get(key), new.get(key)
        if a == b:
            if keep_unchanged:
                fields.extend(_unchanged(key, a))
            continue
        if key in FLAT_MAPS and _is_string_map(a) and _is_string_map(b):
            fields.extend(_flat_map(key, _mapping(a) or {}, _mapping(b) or {}, keep_unchanged))
        elif isinstance(a, Mapping) or isinstance(b, Mapping):
            objects.append(
                _object(key, a if isinstance(a, Mapping) else None, b if isinstance(b, Mapping) else None, contextual)
            )
        elif _is_object_list(a) or _is_object_list(b):
            objects.extend(_object_list(key, _list(a), _list(b), contextual))
        elif isinstance(a, list) or isinstance(b, list):
            fields.extend(_scalar_list(key, _list(a), _list(b), contextual))
        else:
            fields.append(_field(key, a, b))
    fields.sort(key=lambda f: f["Name"])  # Nomad sorts a block's fields by name (Meta[k] among them)
    return fields, objects


def _is_string_map(value: object) -> bool:
    """A map of scalars (or nothing): what Nomad's map[string]string fields hold."""
    if value is None:
        return True
    return isinstance(value, Mapping) and not any(isinstance(v, (Mapping, list)) for v in value.values())


def _flat_map(name: str, old: Spec, new: Spec, keep_unchanged: bool) -> Iterable[FieldDiffJson]:
    """Each key of a string map as the field `name[key]`; equal ones only with keep_unchanged."""
    for key in sorted({*old, *new}):
        a, b = old.get(key), new.get(key)
        if a != b:
            yield _field(f"{name}[{key}]", a, b)
        elif keep_unchanged:
            yield _same(f"{name}[{key}]", _text(a))


def _unchanged(name: str, value: object) -> list[FieldDiffJson]:
    """An equal scalar (or each element of an equal scalar list) as Type None fields; an
    unchanged nested object is left out, as Nomad leaves out an object with no change."""
    if name in FLAT_MAPS and isinstance(value, Mapping) and _is_string_map(value):
        return list(_flat_map(name, value, value, True))
    if isinstance(value, Mapping) or _is_object_list(value):
        return []
    values = value if isinstance(value, list) else [value]
    return [_same(name, _text(v)) for v in values]


def _same(name: str, text: str) -> FieldDiffJson:
    return {"Type": NONE, "Name": name, "Old": text, "New": text, "Annotations": None}


def _object(name: str, old: Spec | None, new: Spec | None, contextual: bool) -> ObjectDiffJson:
    fields, objects = _block(old or {}, new or {}, frozenset(), contextual, keep_unchanged=contextual)
    return {"Type": _kind(old, new, True), "Name": name, "Fields": fields or None, "Objects": objects or None}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


def _mapping(value: object) -> Spec | None:
    return value if isinstance(value, Mapping) else None


def _is_object_list(value: object) -> bool:
    return isinstance(value, list) and any(isinstance(v, Mapping) for v in value)


def _object_list(name: str, old: list[object], new: list[object], contextual: bool) -> Iterable[ObjectDiffJson]:
    for i in range(max(len(old), len(new))):
        a = old[i] if i < len(old) else None
        b = new[i] if i < len(new) else None
        if a != b:
            yield _object(name, _mapping(a), _mapping(b), contextual)


def _scalar_list(name: str, old: list[object], new: list[object], contextual: bool) -> Iterable[FieldDiffJson]:
    """Set semantics, as Nomad diffs Datacenters and similar string lists; contextual: the
    values on both sides too, as Type None (Nomad's stringSetDiff)."""
    before, after = [_text(v) for v in old], [_text(v) for v in new]
    if contextual:
        for value in sorted(set(before) & set(after)):
            yield _same(name, value)
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
