"""The read-time canonical job, the read-back update block, and unknown keys at registration."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import JobSpecError, normalize_job
from app.jobspec.canonical import canonical_job, job_update_as_sent
from app.jobspec.unknown_keys import unknown_keys
from tests.support import nomad_fields as nomad

pytestmark = pytest.mark.unit

SECOND = 1_000_000_000


def job(**fields: Any) -> dict[str, Any]:
    return {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}], **fields}


def test_keys_stored_before_registration_refused_them_are_not_sent() -> None:
    # Specs stored before unknown keys were refused may hold any key; the output has Nomad's only.
    spec: Any = normalize_job(job())  # a stored spec with keys JobSpec does not have
    spec["Bogus"] = 1
    spec["TaskGroups"][0]["Tasks"][0]["Resources"]["Memroy"] = 64
    out: Any = canonical_job(spec)
    assert sorted(out) == sorted(nomad.JOB)
    assert sorted(out["TaskGroups"][0]["Tasks"][0]["Resources"]) == sorted(nomad.RESOURCES)


def test_partial_blocks_are_completed_with_nomads_defaults() -> None:
    spec = normalize_job(job())
    spec["TaskGroups"][0]["Tasks"][0]["LogConfig"] = {"MaxFileSizeMB": 2}
    spec["TaskGroups"][0]["Disconnect"] = {"LostAfter": 5 * SECOND}
    out: Any = canonical_job(spec)
    group = out["TaskGroups"][0]
    assert group["Tasks"][0]["LogConfig"] == {"MaxFiles": 10, "MaxFileSizeMB": 2, "Disabled": False}
    assert group["Disconnect"] == {
        "LostAfter": 5 * SECOND,
        "StopOnClientAfter": None,
        "Replace": True,
        "Reconcile": "best_score",
    }


def test_network_hostname_is_sent_only_when_set() -> None:
    spec = normalize_job(job())
    spec["TaskGroups"][0]["Networks"] = [{"Mode": "bridge"}, {"Mode": "bridge", "Hostname": "h"}]
    out: Any = canonical_job(spec)
    networks = out["TaskGroups"][0]["Networks"]
    assert "Hostname" not in networks[0] and networks[1]["Hostname"] == "h"
    assert sorted(networks[0]) == sorted(nomad.NETWORK_RESOURCE)


def test_the_stored_spec_is_left_alone() -> None:
    spec = normalize_job(job())
    before = repr(spec)
    out: Any = canonical_job(spec)
    out["TaskGroups"][0]["Tasks"][0]["Resources"]["CPU"] = 1
    assert repr(spec) == before


@pytest.mark.parametrize(
    ("update", "expected"),
    [
        # The job-level form Nomad sends: only stagger and max_parallel are settings.
        ({"Stagger": 10 * SECOND, "MaxParallel": 2}, {"Stagger": 10 * SECOND, "MaxParallel": 2}),
        # All zero: Nomad's empty update block (a batch job's).
        ({"Stagger": 0, "MaxParallel": 0}, None),
    ],
)
def test_read_back_job_level_update(update: dict[str, Any], expected: dict[str, Any] | None) -> None:
    zeros = {
        "HealthCheck": "",
        "MinHealthyTime": 0,
        "HealthyDeadline": 0,
        "ProgressDeadline": 0,
        "AutoRevert": False,
        "AutoPromote": False,
        "Canary": 0,
    }
    out = job_update_as_sent(job(Update={**zeros, **update}))
    assert isinstance(out, dict) and out.get("Update") == expected


@pytest.mark.parametrize(
    "update",
    [
        {"MaxParallel": 2, "HealthCheck": ""},  # not every key: a client's own block
        {"Stagger": 0, "MaxParallel": 1, "HealthCheck": "checks", "MinHealthyTime": 0, "HealthyDeadline": 0}
        | {"ProgressDeadline": 0, "AutoRevert": False, "AutoPromote": False, "Canary": 0},
        {"Stagger": 0, "MaxParallel": 1, "HealthCheck": "", "MinHealthyTime": 0, "HealthyDeadline": 0}
        | {"ProgressDeadline": 0, "AutoRevert": 0, "AutoPromote": False, "Canary": False},
    ],
)
def test_other_update_blocks_are_taken_as_written(update: dict[str, Any]) -> None:
    payload = job(Update=update)
    assert job_update_as_sent(payload) is payload


def test_unknown_keys_are_named_by_path_at_every_level() -> None:
    payload = job(
        Bogus=1,
        Reschedule={"Attempts": 1, "Tries": 2},
        Spreads=[{"Attribute": "x", "SpreadTarget": [{"Value": "a", "Pct": 5}]}],
    )
    group = payload["TaskGroups"][0]
    group["Networks"] = [{"Mode": "host", "DynamicPorts": [{"Label": "a", "X": 1}]}]
    task = group["Tasks"][0]
    task["Resources"] = {"CPU": 100, "Networks": [{"MBit": 1}]}
    task["LogConfig"] = {"Enabled": True, "Rotate": 1}
    assert {e.field for e in unknown_keys(payload)} == {
        "Job.Bogus",
        "Job.Spreads[0].SpreadTarget[0].Pct",
        "Job.Reschedule.Tries",
        "Job.TaskGroups[0].Networks[0].DynamicPorts[0].X",
        "Job.TaskGroups[0].Tasks[0].Resources.Networks[0].MBit",
        "Job.TaskGroups[0].Tasks[0].LogConfig.Rotate",
    }
    assert unknown_keys(job(Bogus=1))[0].message == "is not a field of Nomad's Job"


def test_blocks_kept_as_written_are_not_looked_into() -> None:
    payload = job(Multiregion={"Anything": 1}, VaultToken="", ConsulToken="")
    task = payload["TaskGroups"][0]["Tasks"][0]
    task |= {"Config": {"image": "x", "any_key": 1}, "Env": {"A": "1"}, "Vault": {"Whatever": 1}}
    payload["TaskGroups"][0]["Services"] = [{"Name": "web", "Unchecked": True}]
    assert unknown_keys(payload) == []
    normalize_job(payload)


def test_unknown_keys_come_with_the_other_errors() -> None:
    with pytest.raises(JobSpecError) as caught:
        normalize_job(job(Priority=500, Bogus=1))
    assert {e.field for e in caught.value.errors} == {"Job.Bogus", "Job.Priority"}
