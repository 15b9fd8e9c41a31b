"""The keys of Nomad's job structs, as Nomad's HTTP API sends and accepts them, derived from the
one table of the job's shape: the TypedDicts of app/wire/job.py and their marks (app/wire/marks.py).

Output follows ``nomad/structs`` (what ``GET /v1/job/:id`` encodes): each TypedDict's keys in
order. Input also takes the keys marked ``InputOnly`` (``Job.Reschedule``, ``Job.Migrate``...),
which Nomad folds into the groups. Each key maps to the value Nomad sends when the job does not
set it: Go's zero value for its JSON type (``None`` for pointers, slices and maps), the value of
its ``Zero`` mark, or a ``Nested`` struct of ``CANONICAL`` that is canonicalised in turn. Blocks
corral keeps without reading (services, templates' contents, vault...) are not in ``CANONICAL``:
they pass through as the client wrote them.
"""

from __future__ import annotations

import types
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

from pydantic.alias_generators import to_snake
from typing_extensions import is_typeddict

from app.wire import job as wire_job
from app.wire.json import JsonValue
from app.wire.marks import AsSent, Filled, Hcl, InputOnly, NotInHcl, OmitEmpty, Zero

# The structs of Nomad's job its answer renders with every key, by their nomad/structs names:
# each is the TypedDict of app/wire/job.py named after it with "Spec" appended.
CANONICAL = (
    "Job",
    "TaskGroup",
    "Task",
    "Resources",
    "UpdateStrategy",
    "MigrateStrategy",
    "ReschedulePolicy",
    "RestartPolicy",
    "EphemeralDisk",
    "LogConfig",
    "Constraint",
    "Affinity",
    "Spread",
    "SpreadTarget",
    "NetworkResource",
    "Port",
    "PeriodicConfig",
    "ParameterizedJobConfig",
    "TaskLifecycleConfig",
    "Template",
    "ChangeScript",
    "WaitConfig",
    "DispatchPayloadConfig",
    "JobUIConfig",
    "JobUILink",
    "ScalingPolicy",
    "DisconnectStrategy",
)


# The job file's block of each struct (app.jobspec.hcl_schema.SCHEMAS, checked against the table
# by tests/unit/jobspec/test_shape_table.py).
HCL_BLOCKS = {
    "job": "Job",
    "group": "TaskGroup",
    "task": "Task",
    "constraint": "Constraint",
    "affinity": "Affinity",
    "spread": "Spread",
    "target": "SpreadTarget",
    "update": "UpdateStrategy",
    "migrate": "MigrateStrategy",
    "reschedule": "ReschedulePolicy",
    "restart": "RestartPolicy",
    "periodic": "PeriodicConfig",
    "parameterized": "ParameterizedJobConfig",
    "network": "NetworkResource",
    "port": "Port",
    "ephemeral_disk": "EphemeralDisk",
    "disconnect": "DisconnectStrategy",
    "scaling": "ScalingPolicy",
    "resources": "Resources",
    "logs": "LogConfig",
    "lifecycle": "TaskLifecycleConfig",
    "dispatch_payload": "DispatchPayloadConfig",
    "ui": "JobUIConfig",
    "link": "JobUILink",
    "template": "Template",
    "change_script": "ChangeScript",
    "wait": "WaitConfig",
}


@dataclass(frozen=True)
class Nested:
    """A struct-typed key: ``shape`` names its entry in ``SHAPES``.

    ``many``: a list of such structs. ``filled``: Nomad always sends the struct (its
    Canonicalize creates it), so an unset one is rendered from the shape's defaults.
    """

    shape: str
    many: bool = False
    filled: bool = False


OMIT_EMPTY = OmitEmpty()
Slot = Nested | OmitEmpty | Any


def typed_dict(shape: str) -> type:
    """The TypedDict of app/wire/job.py that defines the struct `shape`."""
    found: type = getattr(wire_job, f"{shape}Spec")
    return found


def fields(shape: str) -> dict[str, object]:
    """The struct's keys and their annotations (marks included), in declaration order."""
    # JsonValue is a recursive alias whose inner name resolves only where it is defined.
    hints: dict[str, object] = get_type_hints(typed_dict(shape), include_extras=True, localns={"JsonValue": JsonValue})
    return hints


def _marks(hint: object) -> tuple[object, tuple[object, ...]]:
    if get_origin(hint) is Annotated:
        base, *marks = get_args(hint)
        return base, tuple(marks)
    return hint, ()


def _shape_of(hint: object) -> str | None:
    """The CANONICAL shape a TypedDict annotation names, if any."""
    name = getattr(hint, "__name__", "")
    shape = name.removesuffix("Spec")
    return shape if is_typeddict(hint) and shape in CANONICAL and typed_dict(shape) is hint else None


def _slot(hint: object) -> Slot:
    base, marks = _marks(hint)
    for mark in marks:
        if isinstance(mark, Zero):
            return mark.value
        if isinstance(mark, OmitEmpty):
            return OMIT_EMPTY
        if isinstance(mark, AsSent):
            return None
    members = get_args(base) if get_origin(base) in (Union, types.UnionType) else (base,)
    present = [m for m in members if m is not type(None)]
    nullable = len(present) < len(members)
    only = present[0] if len(present) == 1 else None
    if (shape := _shape_of(only)) is not None:
        return Nested(shape, filled=any(isinstance(m, Filled) for m in marks))
    if get_origin(only) is list and (shape := _shape_of(get_args(only)[0])) is not None:
        return Nested(shape, many=True)
    return None if nullable or only is None else _zero(only)


def _zero(hint: object) -> object:
    """Go's zero value for a key of this JSON type."""
    if hint is bool:
        return False
    if hint is int:
        return 0
    if hint is float:
        return 0.0
    if hint is str or get_origin(hint) is Literal:
        return ""
    return None  # slices, maps, pointers to structs corral keeps as sent


def hcl_name(shape: str, key: str) -> str | None:
    """How a job file spells the struct's key: its Hcl mark, else the key in snake_case; None
    for a key no job file spells (NotInHcl)."""
    for mark in _marks(fields(shape)[key])[1]:
        if isinstance(mark, Hcl):
            return mark.name
        if isinstance(mark, NotInHcl):
            return None
    return to_snake(key)


def _input_only(hint: object) -> bool:
    return any(isinstance(mark, InputOnly) for mark in _marks(hint)[1])


def _shapes() -> dict[str, dict[str, Slot]]:
    return {
        shape: {key: _slot(hint) for key, hint in fields(shape).items() if not _input_only(hint)} for shape in CANONICAL
    }


SHAPES: dict[str, dict[str, Slot]] = _shapes()

# Keys the api package accepts that nomad/structs does not carry: Nomad merges the job's
# Reschedule and Migrate into its groups, reads LogConfig.Enabled as the inverse of
# Disabled, and takes a scaling policy's namespace from the job. VaultToken and
# ConsulToken were api.Job fields until Nomad 1.9; older CLIs (and job files) still send them.
INPUT_ONLY: dict[str, frozenset[str]] = {
    shape: keys
    for shape in CANONICAL
    if (keys := frozenset(key for key, hint in fields(shape).items() if _input_only(hint)))
}
# Input-only keys whose value is itself a struct to check.
INPUT_NESTED: dict[str, dict[str, Nested]] = {
    shape: nested
    for shape, keys in INPUT_ONLY.items()
    if (nested := {k: s for k in sorted(keys) if isinstance(s := _slot(_marks(fields(shape)[k])[0]), Nested)})
}


def accepted_keys(shape: str) -> frozenset[str]:
    """The keys a registration may carry in a struct of this shape."""
    return frozenset(SHAPES[shape]) | INPUT_ONLY.get(shape, frozenset())


def nested_slots(shape: str) -> dict[str, Nested]:
    """The struct-typed keys of a shape, input-only ones included."""
    slots = {key: slot for key, slot in SHAPES[shape].items() if isinstance(slot, Nested)}
    return {**slots, **INPUT_NESTED.get(shape, {})}
