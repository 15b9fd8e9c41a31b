"""Nomad's text form of a JobDiff, as `job history -p` prints it (Nomad's formatJobDiff, not
verbose, without colours): markers `+`, `-`, `+/-`, field names and markers aligned per block,
each nested object closed by a brace under its marker."""

from __future__ import annotations

from collections.abc import Sequence

from app.wire.job_diff import FieldDiffJson, JobDiffJson, ObjectDiffJson, TaskDiffJson, TaskGroupDiffJson

MARKERS = {"Added": "+ ", "Deleted": "- ", "Edited": "+/- "}


def _marker(kind: str) -> str:
    return MARKERS.get(kind, "")


def _longest(fields: Sequence[FieldDiffJson], objects: Sequence[ObjectDiffJson]) -> tuple[int, int]:
    """The longest field name and the longest marker, for alignment."""
    longest_field = max((len(f["Name"]) for f in fields), default=0)
    kinds = [f["Type"] for f in fields] + [o["Type"] for o in objects]
    longest_marker = max((len(_marker(kind)) for kind in kinds), default=0)
    return longest_field, longest_marker


def _quoted(value: str) -> str:
    """Go's %q of a string, for the characters a job value holds."""
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _field(diff: FieldDiffJson, start: int, key_pad: int, value_pad: int) -> str:
    out = f"{' ' * start}{_marker(diff['Type'])}{' ' * key_pad}{diff['Name']}: {' ' * value_pad}"
    kind = diff["Type"]
    if kind == "Deleted":
        out += _quoted(diff["Old"])
    elif kind == "Edited":
        out += f"{_quoted(diff['Old'])} => {_quoted(diff['New'])}"
    else:
        out += _quoted(diff["New"])
    if diff["Annotations"]:
        out += f" ({', '.join(diff['Annotations'])})"
    return out


def _object(diff: ObjectDiffJson, start: int, key_pad: int) -> str:
    marker = _marker(diff["Type"])
    out = f"{' ' * start}{marker}{' ' * key_pad}{diff['Name']} {{\n"
    fields, objects = diff.get("Fields") or [], diff.get("Objects") or []
    longest_field, longest_marker = _longest(fields, objects)
    out += _aligned(fields, objects, start + key_pad + 2, longest_field, longest_marker)
    return f"{out}\n{' ' * (start + len(marker) + key_pad)}}}"


def _aligned(
    fields: Sequence[FieldDiffJson],
    objects: Sequence[ObjectDiffJson],
    start: int,
    longest_field: int,
    longest_marker: int,
) -> str:
    parts = [_field(f, start, longest_marker - len(_marker(f["Type"])), longest_field - len(f["Name"])) for f in fields]
    parts += [_object(o, start, longest_marker - len(_marker(o["Type"]))) for o in objects]
    return "\n".join(parts)


def _task(task: TaskDiffJson, start: int, task_pad: int) -> str:
    out = f"{' ' * start}{_marker(task['Type'])}{' ' * task_pad}Task: {_quoted(task['Name'])}"
    if task["Annotations"]:
        out += f" ({', '.join(task['Annotations'])})"
    if task["Type"] != "Edited":
        return out  # added, deleted or unchanged tasks show no fields unless verbose
    fields, objects = task.get("Fields") or [], task.get("Objects") or []
    longest_field, longest_marker = _longest(fields, objects)
    return f"{out}\n{_aligned(fields, objects, start + 2, longest_field, longest_marker)}"


def _group(group: TaskGroupDiffJson, pad: int) -> str:
    out = f"{_marker(group['Type'])}{' ' * pad}Task Group: {_quoted(group['Name'])}"
    updates = group.get("Updates") or {}
    if updates:
        out += f" ({', '.join(f'{updates[k]} {k}' for k in sorted(updates))})"
    out += "\n"
    fields, objects, tasks = group.get("Fields") or [], group.get("Objects") or [], group.get("Tasks") or []
    longest_field, longest_marker = _longest(fields, objects)
    longest_marker = max([longest_marker, *(len(_marker(t["Type"])) for t in tasks)])
    start = pad + 2
    if group["Type"] == "Edited":
        block = _aligned(fields, objects, start, longest_field, longest_marker)
        out += f"{block}\n" if block else ""
    for task in tasks:
        out += _task(task, start, longest_marker - len(_marker(task["Type"]))) + "\n"
    return out


def format_job_diff(diff: JobDiffJson) -> str:
    """The text of a JobDiff; only an edited job shows its own fields and objects."""
    out = f"{_marker(diff['Type'])}Job: {_quoted(diff.get('ID') or '')}\n"
    fields, objects, groups = diff.get("Fields") or [], diff.get("Objects") or [], diff.get("TaskGroups") or []
    longest_field, longest_marker = _longest(fields, objects)
    longest_marker = max([longest_marker, *(len(_marker(g["Type"])) for g in groups)])
    if diff["Type"] == "Edited":
        block = _aligned(fields, objects, 0, longest_field, longest_marker)
        out += f"{block}\n" if block else ""
    for group in groups:
        out += _group(group, longest_marker - len(_marker(group["Type"]))) + "\n"
    return out
