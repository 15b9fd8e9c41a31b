"""Periodic and parameterized (dispatched) jobs."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import normalize_job
from tests.support.jobspec_builders import job, messages_at

pytestmark = pytest.mark.unit


def periodic(**fields: Any) -> dict[str, Any]:
    return job(Type="batch", Periodic=fields)


@pytest.mark.parametrize(
    "spec",
    [
        "*/15 * * * *",
        "30 2 * * * 2030",
        "*/5 * * * * * *",
        "0 9 * JAN-MAR MON-FRI",
        "0 9 * january-march monday-friday",
        "0 0 L * ?",
        "0 0 LW * *",
        "0 0 15W * *",
        "0 0 * * 5L",
        "@daily",
        "@annually",
        "5,10 1-3 */2 * 1#2",
    ],
)
def test_cron_specs_are_accepted(spec: str) -> None:
    config = normalize_job(periodic(Spec=spec))["Periodic"]
    assert config is not None and config["Spec"] == spec


def test_several_specs_and_time_zones_are_accepted() -> None:
    out = normalize_job(
        job(Type="sysbatch", Periodic={"Specs": ["0 * * * *", "30 * * * *"], "TimeZone": "America/New_York"})
    )
    config = out["Periodic"]
    assert config is not None and config["Specs"] == ["0 * * * *", "30 * * * *"]
    assert config["TimeZone"] == "America/New_York"


@pytest.mark.parametrize(
    ("payload", "path", "message"),
    [
        (periodic(), "Job.Periodic.Spec", "is required when periodic is enabled (or set Specs)"),
        (
            periodic(Spec="* * * *"),
            "Job.Periodic.Spec",
            'is not a valid cron expression: needs 5 to 7 fields, got 4 in "* * * *"',
        ),
        (
            periodic(Spec="* * * * $"),
            "Job.Periodic.Spec",
            "is not a valid cron expression: syntax error in day-of-week field: '$'",
        ),
        (
            periodic(Spec="61 * * * *"),
            "Job.Periodic.Spec",
            "is not a valid cron expression: syntax error in minute field: '61'",
        ),
        (
            periodic(Spec="0 0 * * * 1969"),
            "Job.Periodic.Spec",
            "is not a valid cron expression: syntax error in year field: '1969'",
        ),
        (periodic(Spec="@midnight"), "Job.Periodic.Spec", "is not a valid cron expression: unknown macro '@midnight'"),
        (periodic(Specs=["@daily", "0 0 32 * *"]), "Job.Periodic.Specs[1]", "is not a valid cron expression"),
        (
            periodic(Specs=["* * * * *", "nope"]),
            "Job.Periodic.Specs[1]",
            "is not a valid cron expression: needs 5 to 7 fields, got 1",
        ),
        (periodic(Spec="* * * * *", Specs=["* * * * *"]), "Job.Periodic.Specs", "cannot be combined with Spec"),
        (periodic(Spec="@daily", SpecType="test"), "Job.Periodic.SpecType", 'must be one of cron, got "test"'),
        (
            periodic(Spec="@daily", TimeZone="Mars/Olympus"),
            "Job.Periodic.TimeZone",
            'must be an IANA time zone such as "UTC" or "Europe/Berlin", got "Mars/Olympus"',
        ),
        (periodic(Spec="@daily", TimeZone="../etc"), "Job.Periodic.TimeZone", "must be an IANA time zone"),
        (
            periodic(Spec="@daily", ProhibitOverlap="yes"),
            "Job.Periodic.ProhibitOverlap",
            "must be a boolean, got string",
        ),
        (periodic(Specs="@daily"), "Job.Periodic.Specs", "must be a list, got string"),
        (job(Periodic={"Spec": "@daily"}), "Job.Periodic", "periodic block is not allowed for service jobs"),
        (
            job(Type="system", Periodic={"Spec": "@daily"}),
            "Job.Periodic",
            "periodic block is not allowed for system jobs",
        ),
        (
            job(Type="batch", Periodic={"Spec": "@daily"}, ParameterizedJob={}),
            "Job.Periodic",
            "cannot be combined with ParameterizedJob",
        ),
        (
            job(Type="batch", ParameterizedJob={"Payload": "maybe"}),
            "Job.ParameterizedJob.Payload",
            "must be one of optional, required, forbidden",
        ),
        (
            job(Type="batch", ParameterizedJob={"MetaRequired": "a"}),
            "Job.ParameterizedJob.MetaRequired",
            "must be a list, got string",
        ),
        (job(ParameterizedJob={}), "Job.ParameterizedJob", "parameterized block is not allowed for service jobs"),
    ],
)
def test_launch_rules(payload: dict[str, Any], path: str, message: str) -> None:
    found = messages_at(payload, path)
    assert any(text.startswith(message) for text in found), found


def test_disabled_periodic_needs_no_spec() -> None:
    config = normalize_job(periodic(Enabled=False))["Periodic"]
    assert config is not None and config["Enabled"] is False


def test_parameterized_job_is_kept() -> None:
    config = {"Payload": "required", "MetaRequired": ["input"], "MetaOptional": ["hint"]}
    assert normalize_job(job(Type="batch", ParameterizedJob=config))["ParameterizedJob"] == config
