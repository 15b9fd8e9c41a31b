"""Property: normalising is idempotent, so canonical jobs can be stored and re-validated."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.jobspec import JobSpecError, normalize_job

pytestmark = pytest.mark.unit

SECOND = 1_000_000_000

NAMES = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_", min_size=1, max_size=12)
JSON_SCALARS = st.none() | st.booleans() | st.integers(-(2**31), 2**31) | st.text(max_size=8)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
# Fields of Nomad's structs that the models do not type, per level: they ride along untouched.
EXTRA_KEYS = {
    "job": st.sampled_from(["VaultToken", "ConsulToken", "Multiregion", "VaultNamespace"]),  # UI is typed
    # Services, volumes, templates and artifacts are typed now: no longer free-form extras.
    "group": st.sampled_from(["Consul"]),
    "task": st.sampled_from(["Vault"]),
}
STRING_MAPS = st.dictionaries(NAMES, st.text(max_size=8), max_size=3)


def duration(seconds: int) -> st.SearchStrategy[int | str]:
    """The same duration, as nanoseconds or as any of a few Go spellings."""
    spellings: list[int | str] = [seconds * SECOND, f"{seconds}s", f"{seconds * 1000}ms"]
    if seconds and seconds % 60 == 0:
        spellings.append(f"{seconds // 60}m")
    return st.sampled_from(spellings)


@st.composite
def optional_fields(draw: st.DrawFn, fields: dict[str, st.SearchStrategy[Any]]) -> dict[str, Any]:
    """A random subset of ``fields``; an omitted field is sometimes sent as null instead."""
    out: dict[str, Any] = {}
    for key, strategy in fields.items():
        choice = draw(st.sampled_from(["set", "omit", "null"]))
        if choice == "set":
            out[key] = draw(strategy)
        elif choice == "null":
            out[key] = None
    return out


@st.composite
def extras(draw: st.DrawFn, level: str) -> dict[str, Any]:
    return draw(st.dictionaries(EXTRA_KEYS[level], JSON_VALUES, max_size=2))


@st.composite
def constraints(draw: st.DrawFn) -> dict[str, Any]:
    operand = draw(st.sampled_from(["=", "!=", ">=", "regexp", "version", "set_contains", "is_set", "distinct_hosts"]))
    if operand == "distinct_hosts":
        return {"Operand": operand}
    if operand == "is_set":
        return {"Operand": operand, "LTarget": "${meta.gpu}"}
    target = {"regexp": "^lin.*", "version": ">= 1.2, < 2"}.get(operand, draw(NAMES))
    item = {"LTarget": "${attr.kernel.name}", "RTarget": target}
    if operand != "=" or draw(st.booleans()):
        item["Operand"] = operand
    return item


@st.composite
def affinities(draw: st.DrawFn) -> dict[str, Any]:
    item: dict[str, Any] = {"LTarget": "${node.class}", "RTarget": draw(NAMES)}
    item |= draw(optional_fields({"Weight": st.integers(1, 100) | st.integers(-100, -1), "Operand": st.just("!=")}))
    return item


@st.composite
def spreads(draw: st.DrawFn) -> dict[str, Any]:
    values = draw(st.lists(NAMES, max_size=3, unique=True))
    targets = [{"Value": value, "Percent": draw(st.integers(0, 33))} for value in values]
    return {
        "Attribute": "${node.datacenter}",
        **draw(optional_fields({"Weight": st.integers(0, 100)})),
        "SpreadTarget": targets,
    }


@st.composite
def networks(draw: st.DrawFn) -> dict[str, Any]:
    labels = draw(st.lists(NAMES, max_size=4, unique=True))
    split = draw(st.integers(0, len(labels)))
    static_values = draw(st.lists(st.integers(1, 65535), min_size=split, max_size=split, unique=True))
    reserved = [{"Label": label, "Value": value} for label, value in zip(labels[:split], static_values, strict=True)]
    dynamic = [{"Label": label, **draw(optional_fields({"To": st.integers(-1, 65535)}))} for label in labels[split:]]
    return {"ReservedPorts": reserved, "DynamicPorts": dynamic, **draw(optional_fields({"Mode": st.just("bridge")}))}


@st.composite
def resources(draw: st.DrawFn) -> dict[str, Any]:
    memory = draw(st.integers(10, 4096))
    out: dict[str, Any] = {"MemoryMB": memory}
    if draw(st.booleans()):
        out["Cores"] = draw(st.integers(1, 8))
    else:
        out |= draw(optional_fields({"CPU": st.integers(1, 4000)}))
    out |= draw(optional_fields({"MemoryMaxMB": st.sampled_from([0, memory, memory * 2])}))
    return out


@st.composite
def restart_policies(draw: st.DrawFn) -> dict[str, Any]:
    return draw(
        optional_fields(
            {
                "Attempts": st.integers(0, 3),
                "Delay": duration(15),
                "Interval": duration(3600),
                "Mode": st.sampled_from(["fail", "delay"]),
            }
        )
    )


@st.composite
def update_strategies(draw: st.DrawFn) -> dict[str, Any]:
    update = draw(
        optional_fields(
            {
                "MaxParallel": st.integers(0, 5),
                "HealthCheck": st.sampled_from(["checks", "task_states", "manual"]),
                "MinHealthyTime": duration(30),
                "HealthyDeadline": duration(300),
                "ProgressDeadline": st.sampled_from([0, "15m"]),
                "AutoRevert": st.booleans(),
                "Stagger": duration(60),
            }
        )
    )
    if draw(st.booleans()):
        # Always together: a merge must never pair auto-promotion with another block's 0 canaries.
        canary = draw(st.integers(0, 3))
        update |= {"Canary": canary, "AutoPromote": canary > 0}
    return update


@st.composite
def reschedule_policies(draw: st.DrawFn) -> dict[str, Any]:
    policy = draw(
        optional_fields(
            {
                "Attempts": st.integers(0, 5),
                "Delay": duration(60),
                "DelayFunction": st.sampled_from(["constant", "exponential", "fibonacci"]),
                "MaxDelay": duration(3600),
                "Unlimited": st.booleans(),
            }
        )
    )
    if policy.get("DelayFunction") not in (None, "constant"):
        # A growing delay needs a cap of its own: the batch default cap is 0.
        policy["MaxDelay"] = "1h"
    # Limited attempts need a window; the service default window is 0.
    policy["Interval"] = draw(duration(3600))
    return policy


@st.composite
def tasks(draw: st.DrawFn, name: str) -> dict[str, Any]:
    task: dict[str, Any] = {"Name": name, "Driver": draw(st.sampled_from(["docker", "exec", "raw_exec"]))}
    task |= draw(
        optional_fields(
            {
                "Config": st.dictionaries(NAMES, JSON_VALUES, max_size=3),
                "Env": STRING_MAPS,
                "Meta": STRING_MAPS,
                "Resources": resources(),
                "Constraints": st.lists(constraints(), max_size=2),
                "Affinities": st.lists(affinities(), max_size=2),
                "RestartPolicy": restart_policies(),
                "KillTimeout": duration(10),
                "ShutdownDelay": duration(0),
            }
        )
    )
    return task | draw(extras("task"))


@st.composite
def groups(draw: st.DrawFn, name: str, job_type: str) -> dict[str, Any]:
    task_names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    group: dict[str, Any] = {"Name": name, "Tasks": [draw(tasks(task_name)) for task_name in task_names]}
    fields: dict[str, st.SearchStrategy[Any]] = {
        "Count": st.integers(0, 10),
        "Constraints": st.lists(constraints(), max_size=2),
        "Affinities": st.lists(affinities(), max_size=2),
        "Spreads": st.lists(spreads(), max_size=2),
        "Networks": st.lists(networks(), max_size=1),
        "EphemeralDisk": st.builds(dict, SizeMB=st.integers(1, 10_000)),
        "RestartPolicy": restart_policies(),
        "Meta": STRING_MAPS,
        "Disconnect": st.builds(dict, LostAfter=duration(300)),
    }
    if job_type in ("service", "system"):
        fields["Update"] = update_strategies()
    if job_type in ("service", "batch"):
        fields["ReschedulePolicy"] = reschedule_policies()
    if job_type == "service":
        fields["Migrate"] = st.builds(dict, MaxParallel=st.integers(0, 3), HealthCheck=st.just("task_states"))
    group |= draw(optional_fields(fields))
    if draw(st.booleans()):
        # Bounds around the count (1 when unset or null); Min may be left to default to the count.
        count = group["Count"] if isinstance(group.get("Count"), int) else 1
        scaling: dict[str, Any] = {"Max": count + draw(st.integers(0, 5))}
        if draw(st.booleans()):
            scaling["Min"] = draw(st.integers(0, count))
        group["Scaling"] = scaling
    return group | draw(extras("group"))


@st.composite
def valid_jobs(draw: st.DrawFn) -> dict[str, Any]:
    job_type = draw(st.sampled_from(["service", "batch", "system", "sysbatch"]))
    group_names = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    job: dict[str, Any] = {"ID": draw(NAMES), "TaskGroups": [draw(groups(name, job_type)) for name in group_names]}
    fields: dict[str, st.SearchStrategy[Any]] = {
        "Type": st.just(job_type),
        "Name": NAMES,
        "Namespace": NAMES,
        "Region": NAMES,
        "Priority": st.integers(1, 100),
        "Datacenters": st.lists(NAMES | st.just("dc*"), min_size=1, max_size=3),
        "NodePool": NAMES,
        "AllAtOnce": st.booleans(),
        "Stop": st.booleans(),
        "Meta": STRING_MAPS,
        "Constraints": st.lists(constraints(), max_size=2),
        "Affinities": st.lists(affinities(), max_size=2),
        "Spreads": st.lists(spreads(), max_size=1),
    }
    if job_type in ("service", "system"):
        fields["Update"] = update_strategies()
    if job_type in ("service", "batch"):
        fields["Reschedule"] = reschedule_policies()
    if job_type in ("batch", "sysbatch"):
        fields["Periodic"] = st.builds(
            dict, Spec=st.sampled_from(["*/5 * * * *", "@daily"]), TimeZone=st.sampled_from(["UTC", "Asia/Tokyo"])
        )
    if job_type == "service":
        fields["Migrate"] = st.builds(dict, MaxParallel=st.integers(0, 3))
    if job_type != "service":
        # Without a Type the job is a service job, which the type-specific blocks would not suit.
        fields.pop("Type")
        job["Type"] = job_type
    return job | draw(optional_fields(fields)) | draw(extras("job"))


# database=None keeps hypothesis from writing an example database into the repository.
@settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(valid_jobs())
def test_normalize_is_idempotent(payload: dict[str, Any]) -> None:
    original = copy.deepcopy(payload)
    once = normalize_job(payload)
    assert normalize_job(once) == once
    assert payload == original


@settings(max_examples=100, deadline=None, database=None)
@given(valid_jobs())
def test_unknown_fields_are_rejected_by_path(payload: dict[str, Any]) -> None:
    payload["XUnknownField"] = {"kept": [1, None, "x"]}
    payload["TaskGroups"][0]["Tasks"][0]["Bogus"] = 1
    with pytest.raises(JobSpecError) as caught:
        normalize_job(payload)
    fields = [error.field for error in caught.value.errors]
    assert "Job.XUnknownField" in fields and "Job.TaskGroups[0].Tasks[0].Bogus" in fields
