"""Whatever registration accepts, the pure scheduler can read and schedule without raising."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.jobspec import JobSpecError, normalize_job
from app.structs import Job
from tests.support import scheduler_harness as h
from tests.support.jobspec_builders import group, job, messages_at, task

pytestmark = pytest.mark.unit

NODES = (h.node("n1"), h.node("n2", dc="dc2", attrs={"rack": "r1"}))

DURATION_LIKE = st.sampled_from(["1h", "30s", "5m", "-1s", "bogus", "", 0, 1, -5, 3_600_000_000_000, 1.5, True, None])
ANY_VALUE: st.SearchStrategy[object] = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**40), max_value=2**40)
    | st.floats(allow_nan=False, allow_infinity=False, width=32)
    | st.text(max_size=8)
    | st.sampled_from(["1h", "true", "500", "../x", "prestart", "SIGTERM", "local/p.txt"])
    | st.just({})
    | st.just([])
    | st.just([{}])
    | st.just({"Hook": "prestart"})
)

TASK_FIELDS = [
    "Name",
    "Driver",
    "Config",
    "Env",
    "Meta",
    "Resources",
    "KillTimeout",
    "KillSignal",
    "Lifecycle",
    "DispatchPayload",
    "Leader",
    "ShutdownDelay",
    "RestartPolicy",
    "Constraints",
    "Affinities",
    "User",
]
GROUP_FIELDS = [
    "Count",
    "MaxClientDisconnect",
    "StopAfterClientDisconnect",
    "PreventRescheduleOnLost",
    "Disconnect",
    "EphemeralDisk",
    "Networks",
    "Spreads",
    "Update",
    "ReschedulePolicy",
    "RestartPolicy",
    "Meta",
    "Constraints",
    "Migrate",
    "Scaling",
    "ShutdownDelay",
    "Name",
]
JOB_FIELDS = ["Type", "Priority", "Datacenters", "Constraints", "Spreads", "Update", "Reschedule", "Meta", "NodePool"]


# Values that should pass, so that most generated jobs get past the validator and reach the
# scheduler; the hostile values above are mixed in at a lower rate.
PLAUSIBLE: dict[str, list[Any]] = {
    "Name": ["t", "web-1", "a.b"],
    "Driver": ["mock", "raw_exec"],
    "Config": [{}, {"run_for": "1s"}],
    "Env": [{"A": "b"}],
    "Meta": [{"k": "v"}],
    "Resources": [{"CPU": 100, "MemoryMB": 64}, {"CPU": 3000, "MemoryMB": 4096, "MemoryMaxMB": 8192}],
    "KillTimeout": ["5s", 0],
    "KillSignal": ["SIGINT"],
    "Lifecycle": [{"Hook": "prestart", "Sidecar": True}, {"Hook": "poststop"}],
    "DispatchPayload": [{"File": "in/a.txt"}],
    "Leader": [True, False],
    "ShutdownDelay": ["1s"],
    "RestartPolicy": [{"Attempts": 1, "Mode": "delay"}, {"Attempts": 0}],
    "Constraints": [[{"LTarget": "${attr.kernel.name}", "RTarget": "linux"}], [{"Operand": "distinct_hosts"}]],
    "Affinities": [[{"LTarget": "${node.datacenter}", "RTarget": "dc2", "Weight": -50}]],
    "User": ["nobody"],
    "Count": [0, 1, 3],
    "MaxClientDisconnect": ["1h", 3_600_000_000_000],
    "StopAfterClientDisconnect": ["10m"],
    "PreventRescheduleOnLost": [True],
    "Disconnect": [{"LostAfter": "1h", "Replace": False, "Reconcile": "keep_original"}, {"StopOnClientAfter": "1m"}],
    "EphemeralDisk": [{"SizeMB": 10}],
    "Networks": [[{"DynamicPorts": [{"Label": "http"}], "ReservedPorts": [{"Label": "s", "Value": 8080}]}]],
    "Spreads": [[{"Attribute": "${node.datacenter}", "SpreadTarget": [{"Value": "dc1", "Percent": 50}]}]],
    "Update": [{"MaxParallel": 2, "Canary": 1}, {"MaxParallel": 0}],
    "ReschedulePolicy": [{"Attempts": 1, "Interval": "1h", "Unlimited": False}],
    "Reschedule": [{"Unlimited": True, "DelayFunction": "fibonacci"}],
    "Migrate": [{"MaxParallel": 2}],
    "Scaling": [{"Min": 0, "Max": 5}],
    "Type": ["service", "batch", "system", "sysbatch"],
    "Priority": [1, 50, 100],
    "Datacenters": [["dc1"], ["dc*"], ["*"]],
    "NodePool": ["default", "all"],
}


def _value_for(key: str) -> st.SearchStrategy[Any]:
    plausible = st.sampled_from(PLAUSIBLE[key]) if key in PLAUSIBLE else st.nothing()
    hostile = _hostile_value_for(key)
    return st.integers(0, 7).flatmap(lambda roll: hostile if roll == 0 else plausible)


def _hostile_value_for(key: str) -> st.SearchStrategy[Any]:
    if key in ("MaxClientDisconnect", "StopAfterClientDisconnect", "KillTimeout", "ShutdownDelay"):
        return DURATION_LIKE
    if key == "Disconnect":
        return st.fixed_dictionaries(
            {}, optional={"LostAfter": DURATION_LIKE, "Replace": ANY_VALUE, "Reconcile": ANY_VALUE}
        )
    if key == "Lifecycle":
        return ANY_VALUE | st.fixed_dictionaries(
            {},
            optional={
                "Hook": st.sampled_from(["prestart", "poststart", "poststop", "bogus", ""]) | ANY_VALUE,
                "Sidecar": ANY_VALUE,
            },
        )
    if key == "Resources":
        return ANY_VALUE | st.fixed_dictionaries(
            {}, optional={"CPU": ANY_VALUE, "MemoryMB": ANY_VALUE, "MemoryMaxMB": ANY_VALUE}
        )
    if key == "Networks":
        port = st.fixed_dictionaries({}, optional={"Label": ANY_VALUE, "Value": ANY_VALUE, "To": ANY_VALUE})
        return ANY_VALUE | st.lists(
            st.fixed_dictionaries(
                {}, optional={"ReservedPorts": st.lists(port, max_size=2), "DynamicPorts": st.lists(port, max_size=2)}
            ),
            max_size=1,
        )
    if key == "Spreads":
        target = st.fixed_dictionaries({}, optional={"Value": ANY_VALUE, "Percent": ANY_VALUE})
        return ANY_VALUE | st.lists(
            st.fixed_dictionaries(
                {}, optional={"Attribute": ANY_VALUE, "Weight": ANY_VALUE, "SpreadTarget": st.lists(target, max_size=2)}
            ),
            max_size=2,
        )
    if key == "Count":
        return st.integers(min_value=-2, max_value=4) | ANY_VALUE
    return ANY_VALUE


def _overrides(keys: list[str]) -> st.SearchStrategy[dict[str, Any]]:
    return st.lists(st.sampled_from(keys), unique=True, max_size=4).flatmap(
        lambda chosen: st.fixed_dictionaries({key: _value_for(key) for key in chosen})
    )


specs = st.builds(
    lambda j, g, t: job(**j, TaskGroups=[group(**g, Tasks=[task(**{"Driver": "mock", **t})])]),
    _overrides(JOB_FIELDS),
    _overrides(GROUP_FIELDS),
    _overrides(TASK_FIELDS),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(specs)
def test_every_accepted_job_schedules_without_raising(payload: dict[str, Any]) -> None:
    try:
        spec = normalize_job(payload)
    except JobSpecError:
        return
    j = Job.from_spec(spec)
    snap = h.snapshot(j, NODES)
    result = h.run(snap)
    # A second pass over what the first placed: the reconciler's paths for existing allocations.
    h.run(h.apply(snap, result), key="e2")


def test_group_max_client_disconnect_string_is_a_duration() -> None:
    # Accepted before and stored as "1h"; every worker then failed with a ValueError.
    spec = normalize_job(job(TaskGroups=[group(MaxClientDisconnect="1h")]))
    assert spec["TaskGroups"][0]["MaxClientDisconnect"] == 3600 * 10**9
    j = Job.from_spec(spec)
    assert j.task_groups[0].disconnect is not None
    h.run(h.snapshot(j, NODES))


def test_bad_max_client_disconnect_is_refused_by_field() -> None:
    messages = messages_at(job(TaskGroups=[group(MaxClientDisconnect="soon")]), "Job.TaskGroups[0].MaxClientDisconnect")
    assert messages


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"Lifecycle": {"Hook": "sometimes"}}, "Job.TaskGroups[0].Tasks[0].Lifecycle.Hook"),
        ({"Lifecycle": {"Hook": "prestart", "Sidecar": "yes"}}, "Job.TaskGroups[0].Tasks[0].Lifecycle.Sidecar"),
        ({"KillSignal": 9}, "Job.TaskGroups[0].Tasks[0].KillSignal"),
        ({"KillTimeout": "forever"}, "Job.TaskGroups[0].Tasks[0].KillTimeout"),
        ({"DispatchPayload": {"File": "../../etc/passwd"}}, "Job.TaskGroups[0].Tasks[0].DispatchPayload.File"),
        ({"DispatchPayload": {"File": "/etc/passwd"}}, "Job.TaskGroups[0].Tasks[0].DispatchPayload.File"),
        ({"Leader": "yes"}, "Job.TaskGroups[0].Tasks[0].Leader"),
    ],
)
def test_task_runtime_fields_are_typed(fields: dict[str, Any], path: str) -> None:
    assert messages_at(job(TaskGroups=[group(Tasks=[task(**fields)])]), path)


def test_task_runtime_fields_are_kept_under_nomads_names() -> None:
    spec = normalize_job(
        job(
            Meta={"a": "1"},
            TaskGroups=[
                group(
                    Meta={"b": "2"},
                    Tasks=[
                        task(
                            Lifecycle={"Hook": "prestart", "Sidecar": True},
                            KillTimeout="10s",
                            KillSignal="SIGINT",
                            DispatchPayload={"File": "input.txt"},
                            Meta={"c": "3"},
                        )
                    ],
                )
            ],
        )
    )
    t = spec["TaskGroups"][0]["Tasks"][0]
    assert t["Lifecycle"] == {"Hook": "prestart", "Sidecar": True}
    assert t["KillTimeout"] == 10 * 10**9
    assert t["KillSignal"] == "SIGINT"
    assert t["DispatchPayload"] == {"File": "input.txt"}
    assert (spec["Meta"], spec["TaskGroups"][0]["Meta"], t["Meta"]) == ({"a": "1"}, {"b": "2"}, {"c": "3"})


@pytest.mark.parametrize("name", ["../../tmp/x", "a/b", "a\\b", "..", "a\x00b", "tab\there", "nl\n", "\x7f"])
def test_unsafe_task_names_are_refused(name: str) -> None:
    assert messages_at(job(TaskGroups=[group(Tasks=[task(Name=name)])]), "Job.TaskGroups[0].Tasks[0].Name")


@pytest.mark.parametrize("name", ["../../tmp/x", "a/b", "a\\b", "..", "a\x00b", "bell\x07"])
def test_unsafe_group_names_are_refused(name: str) -> None:
    assert messages_at(job(TaskGroups=[group(Name=name)]), "Job.TaskGroups[0].Name")


@pytest.mark.parametrize("name", ["web", "web-1", "a.b", "x..y.ok"])
def test_ordinary_names_are_accepted(name: str) -> None:
    # "x..y.ok" holds ".." but is not a path component of its own; still refused below.
    payload = job(TaskGroups=[group(Name=name, Tasks=[task(Name=name)])])
    if ".." in name:
        with pytest.raises(JobSpecError):
            normalize_job(payload)
    else:
        normalize_job(payload)


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"ParentID": {"a": 1}}, "Job.ParentID"),
        ({"Dispatched": "yes"}, "Job.Dispatched"),
        ({"Payload": 5}, "Job.Payload"),
    ],
)
def test_child_job_fields_stored_in_columns_are_typed(fields: dict[str, Any], path: str) -> None:
    assert messages_at(job(**fields), path)
