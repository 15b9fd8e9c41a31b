"""Reject keys that are not fields of Nomad's job structs.

Go's JSON decoder drops unknown keys silently, so a misspelt field (``"Cout": 3``) would
register a job that does something else than its author meant. corral names each one
instead. Blocks kept as written (driver config, services, templates...) are not looked
into: their keys belong to the driver or to features corral does not act on.
"""

from __future__ import annotations

from collections.abc import Iterator

from app.jobspec.errors import FieldError, join_path
from app.jobspec.shapes import accepted_keys, nested_slots
from app.wire.json import JsonObject

ROOT = "Job"


def unknown_keys(payload: object) -> list[FieldError]:
    """One error per unknown key anywhere in a job payload, paths as ``Job.TaskGroups[0].X``."""
    if not isinstance(payload, dict):
        return []
    return list(_walk(payload, "Job", []))


def _walk(value: JsonObject, shape: str, path: list[str | int]) -> Iterator[FieldError]:
    known = accepted_keys(shape)
    for key in value:
        if key not in known:
            yield FieldError(join_path(ROOT, [*path, key]), f"is not a field of Nomad's {shape}")
    for key, slot in nested_slots(shape).items():
        child = value.get(key)
        if isinstance(child, dict) and not slot.many:
            yield from _walk(child, slot.shape, [*path, key])
        elif isinstance(child, list) and slot.many:
            for index, item in enumerate(child):
                if isinstance(item, dict):
                    yield from _walk(item, slot.shape, [*path, key, index])
