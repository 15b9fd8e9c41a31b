"""Turn a raw API payload into the typed ``Job`` model, translating pydantic's errors."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError
from pydantic_core import ErrorDetails

from app.jobspec.errors import FieldError, join_path, json_type
from app.jobspec.model import CUSTOM_ERROR, Job

ROOT = "Job"

_EXPECTED = {
    "int_type": "an integer",
    "int_parsing": "an integer",
    "int_from_float": "an integer",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
    "string_type": "a string",
    "float_type": "a number",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
}
_KEY_MARKER = "[key]"
# Stand-ins for ill-typed list items; rule errors they cause are suppressed like others
# under a discarded path.
_BLANKS: dict[str, Callable[[], object]] = {
    "model_type": dict,
    "dict_type": dict,
    "string_type": str,
}
# Every retry removes at least one offending value, and removing values cannot create new
# type errors, so a second round already succeeds; the bound only guards against surprises.
_MAX_ROUNDS = 8


@dataclass
class Decoded:
    """The typed job (``None`` if the payload is not an object at all) and what went wrong.

    ``discarded`` names the values that were thrown away to get a typed job; rule checks
    that fire on or under those paths are artefacts of the removal and must be ignored.
    """

    job: Job | None
    errors: list[FieldError] = field(default_factory=list)
    discarded: list[str] = field(default_factory=list)


def decode_job(payload: object) -> Decoded:
    """Validate the payload's shape, dropping ill-typed values so the rest can be checked."""
    # The copy is ours to prune, and it keeps the output from aliasing the caller's data.
    data: Any = copy.deepcopy(payload)
    decoded = Decoded(job=None)
    for _ in range(_MAX_ROUNDS):
        try:
            decoded.job = Job.model_validate(data)
            return decoded
        except ValidationError as exc:
            details = exc.errors()
        decoded.errors.extend(_field_error(detail) for detail in details)
        for detail in details:
            removed = _discard(data, detail)
            if removed is None:
                return decoded
            decoded.discarded.append(join_path(ROOT, removed))
    return decoded


def _field_error(detail: ErrorDetails) -> FieldError:
    location = list(detail["loc"])
    if location and location[-1] == _KEY_MARKER:
        path = join_path(ROOT, location[:-2])
        return FieldError(path, f"keys must be strings, got {json_type(detail['input'])}")
    path = join_path(ROOT, location)
    if detail["type"] == CUSTOM_ERROR:
        return FieldError(path, str(detail.get("ctx", {}).get("message", detail["msg"])))
    expected = _EXPECTED.get(detail["type"])
    if expected is not None:
        return FieldError(path, f"must be {expected}, got {json_type(detail['input'])}")
    return FieldError(path, detail["msg"])


def _discard(data: Any, detail: ErrorDetails) -> list[str | int] | None:
    """Remove the offending value so the rest of the payload can be typed.

    An object member is simply dropped. A list item is swapped for a blank of the right
    type rather than removed, which would shift its siblings' indexes and make later
    error paths point at the wrong item; if no blank fits, the whole list goes.
    Returns the path cleared, or ``None`` when the payload itself is unusable.
    """
    parts = list(detail["loc"])
    if parts and parts[-1] == _KEY_MARKER:
        parts.pop()
    blank = _BLANKS.get(detail["type"])
    while parts:
        parent = _lookup(data, parts[:-1])
        if parent is _MISSING:
            # An earlier removal already took an ancestor away.
            return parts
        if isinstance(parent, dict):
            parent.pop(parts[-1], None)
            return parts
        if isinstance(parent, list) and blank is not None:
            parent[int(parts[-1])] = blank()
            return parts
        blank = None
        parts.pop()
    return None


_MISSING = object()


def _lookup(data: Any, parts: Sequence[str | int]) -> Any:
    node = data
    for part in parts:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return _MISSING
    return node
