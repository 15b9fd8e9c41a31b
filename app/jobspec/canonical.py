"""A stored job spec in the exact shape Nomad's ``GET /v1/job/:id`` sends.

The stored spec is what registration kept (``normalize_job``'s output: the client's keys
with Nomad's defaults filled in). Nomad answers with every key of its ``structs.Job``,
``TaskGroup`` and ``Task``, unset ones at their zero value, and nothing else; this module
renders that shape at read time, so the stored spec, which the scheduler and the client
read, stays as it is.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import cast

from app.jobspec.shapes import SHAPES, Nested, OmitEmpty
from app.wire.job import JobSpec
from app.wire.json import JsonObject, JsonValue


def canonical_job(spec: JobSpec) -> JsonObject:
    """Every key of Nomad's Job (server-set ones at their zero value: the caller has them)."""
    job = canonical(spec, "Job")
    job["Update"] = _job_update(spec.get("Update"))
    if not job["Name"]:
        job["Name"] = job["ID"]
    for group in _objects(job["TaskGroups"]):
        _fill_scaling_target(group, job)
    return job


def job_update_as_sent(payload: object) -> object:
    """Undo what ``canonical_job`` did to the job's update block, for a job read back.

    Nomad's clients send a read job back as it came (``nomad job inspect`` piped into
    ``nomad job run``): its job-level Update then holds stagger and max_parallel and the
    zero value of every other field, which are not settings but absences (the groups carry
    the real ones). A block whose max_parallel is zero too is Nomad's empty update block.
    """
    if not isinstance(payload, dict) or not _is_job_level_form(payload.get("Update")):
        return payload
    update = payload["Update"]
    if not update["MaxParallel"]:
        return {key: value for key, value in payload.items() if key != "Update"}
    return {**payload, "Update": {key: update[key] for key in _JOB_LEVEL_UPDATE}}


_JOB_LEVEL_UPDATE = ("Stagger", "MaxParallel")


def _is_job_level_form(update: object) -> bool:
    if not isinstance(update, dict) or set(update) != set(SHAPES["UpdateStrategy"]):
        return False
    zero = canonical({}, "UpdateStrategy")
    # type() as well: False == 0 in Python, and a client's false is no zero duration.
    return all(
        type(update[key]) is type(zero[key]) and update[key] == zero[key]
        for key in zero
        if key not in _JOB_LEVEL_UPDATE
    ) and all(type(update[key]) is int for key in _JOB_LEVEL_UPDATE)


def canonical(value: Mapping[str, object], shape: str) -> JsonObject:
    """``value`` with exactly the keys of ``shape``: its own values, defaults for the rest."""
    out: JsonObject = {}
    for key, slot in SHAPES[shape].items():
        # A stored spec holds JSON only (it came from one and goes back as one).
        own = cast(JsonValue, value.get(key))
        if isinstance(slot, OmitEmpty):
            if own:
                out[key] = copy.deepcopy(own)
        elif isinstance(slot, Nested):
            out[key] = _nested(own, slot)
        else:
            out[key] = cast(JsonValue, copy.deepcopy(slot)) if own is None else copy.deepcopy(own)
    return out


def _nested(own: JsonValue, slot: Nested) -> JsonValue:
    if slot.many:
        if not isinstance(own, list):
            return None
        return [canonical(item, slot.shape) if isinstance(item, dict) else item for item in own]
    if isinstance(own, dict):
        return canonical(own, slot.shape)
    return canonical({}, slot.shape) if slot.filled else None


def _job_update(update: object) -> JsonObject:
    """Nomad pushes the update block into the groups and keeps only its stagger and
    max_parallel on the job, and those only when max_parallel is positive."""
    kept: JsonObject = {}
    if isinstance(update, dict) and isinstance(update.get("MaxParallel"), int) and update["MaxParallel"] > 0:
        kept = {"Stagger": cast(JsonValue, update.get("Stagger")) or 0, "MaxParallel": update["MaxParallel"]}
    return canonical(kept, "UpdateStrategy")


def _objects(value: JsonValue) -> list[JsonObject]:
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _fill_scaling_target(group: JsonObject, job: JsonObject) -> None:
    # Nomad names what a group's scaling policy scales when it registers the job.
    scaling = group.get("Scaling")
    if isinstance(scaling, dict) and scaling["Target"] is None:
        scaling["Target"] = {"Namespace": job["Namespace"], "Job": job["ID"], "Group": group["Name"]}
