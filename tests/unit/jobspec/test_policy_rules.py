"""Update, restart, reschedule and migrate blocks, and which job types may carry them."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import FieldError, normalize_job
from tests.support.jobspec_builders import errors_of, group, job, messages_at, task

pytestmark = pytest.mark.unit

GROUP = "Job.TaskGroups[0]"


@pytest.mark.parametrize(
    ("update", "field", "message"),
    [
        ({"MaxParallel": -1}, "MaxParallel", "must not be negative, got -1"),
        ({"HealthCheck": "http"}, "HealthCheck", 'must be one of checks, task_states, manual, got "http"'),
        ({"Canary": -1}, "Canary", "must not be negative, got -1"),
        ({"AutoPromote": True}, "AutoPromote", "requires Canary to be greater than 0"),
        (
            {"HealthyDeadline": "5m", "ProgressDeadline": "5m"},
            "ProgressDeadline",
            "must be 0 or greater than HealthyDeadline (5m), got 5m",
        ),
        (
            {"HealthyDeadline": "20m"},
            "ProgressDeadline",
            "must be 0 or greater than HealthyDeadline (20m), got 10m",
        ),
        (
            {"MinHealthyTime": "5m", "HealthyDeadline": "1m"},
            "MinHealthyTime",
            "must be less than HealthyDeadline (1m), got 5m",
        ),
    ],
)
def test_update_rules(update: dict[str, Any], field: str, message: str) -> None:
    assert message in messages_at(job(Update=update), f"Job.Update.{field}")
    assert message in messages_at(job(TaskGroups=[group(Update=update)]), f"{GROUP}.Update.{field}")


def test_progress_deadline_zero_disables_the_check() -> None:
    out = normalize_job(job(Update={"ProgressDeadline": 0, "HealthyDeadline": "1h"}))
    assert out["Update"]["ProgressDeadline"] == 0


def test_an_inherited_update_problem_is_reported_once() -> None:
    payload = job(Update={"MaxParallel": -1}, TaskGroups=[group(Name="a"), group(Name="b", Update={"Canary": 1})])
    assert errors_of(payload) == [FieldError("Job.Update.MaxParallel", "must not be negative, got -1")]


def test_a_group_problem_arising_from_the_merge_is_reported_on_the_group() -> None:
    payload = job(Update={"MinHealthyTime": "2m"}, TaskGroups=[group(Update={"HealthyDeadline": "1m"})])
    assert errors_of(payload) == [
        FieldError(f"{GROUP}.Update.MinHealthyTime", "must be less than HealthyDeadline (1m), got 2m")
    ]


@pytest.mark.parametrize("job_type", ["batch", "sysbatch"])
def test_update_is_not_allowed_for_batch_jobs(job_type: str) -> None:
    message = f"update block is not allowed for {job_type} jobs"
    assert messages_at(job(Type=job_type, Update={}), "Job.Update") == [message]
    assert messages_at(job(Type=job_type, TaskGroups=[group(Update={})]), f"{GROUP}.Update") == [message]


def test_update_message_for_batch_matches_nomad_wording() -> None:
    assert errors_of(job(Type="batch", Update={"MaxParallel": 1})) == [
        FieldError("Job.Update", "update block is not allowed for batch jobs")
    ]


@pytest.mark.parametrize(
    ("restart", "field", "message"),
    [
        ({"Attempts": -1}, "Attempts", "must not be negative, got -1"),
        ({"Mode": "retry"}, "Mode", 'must be one of fail, delay, got "retry"'),
        (
            {"Attempts": 10, "Delay": "1m", "Interval": "5m"},
            "Interval",
            "must leave room for 10 restarts 1m apart, got 5m",
        ),
    ],
)
def test_restart_rules(restart: dict[str, Any], field: str, message: str) -> None:
    assert message in messages_at(job(TaskGroups=[group(RestartPolicy=restart)]), f"{GROUP}.RestartPolicy.{field}")
    task_path = f"{GROUP}.Tasks[0].RestartPolicy.{field}"
    assert message in messages_at(job(TaskGroups=[group(Tasks=[task(RestartPolicy=restart)])]), task_path)


def test_a_group_restart_problem_is_not_repeated_for_its_tasks() -> None:
    payload = job(TaskGroups=[group(RestartPolicy={"Mode": "x"}, Tasks=[task(RestartPolicy={"Attempts": 1})])])
    assert [error.field for error in errors_of(payload)] == [f"{GROUP}.RestartPolicy.Mode"]


@pytest.mark.parametrize(
    ("policy", "field", "message"),
    [
        ({"Attempts": -1}, "Attempts", "must not be negative, got -1"),
        ({"DelayFunction": "linear"}, "DelayFunction", 'must be one of constant, exponential, fibonacci, got "linear"'),
        ({"Delay": "1s"}, "Delay", "must be at least 5s, got 1s"),
        ({"Delay": 0}, "Delay", "must be at least 5s, got 0s"),
        (
            {"Delay": "2m", "MaxDelay": "1m"},
            "MaxDelay",
            "must be at least Delay (2m) for a growing delay, got 1m",
        ),
        (
            {"Attempts": 3, "Unlimited": False, "Interval": "10s"},
            "Interval",
            "must be at least 15s when Attempts is limited, got 10s",
        ),
    ],
)
def test_reschedule_rules(policy: dict[str, Any], field: str, message: str) -> None:
    assert message in messages_at(job(TaskGroups=[group(ReschedulePolicy=policy)]), f"{GROUP}.ReschedulePolicy.{field}")
    assert message in messages_at(job(Reschedule=policy), f"Job.Reschedule.{field}")


def test_batch_reschedule_interval_rule_uses_batch_defaults() -> None:
    # Batch defaults limit attempts, so a short interval is an error there...
    payload = job(Type="batch", TaskGroups=[group(ReschedulePolicy={"Interval": "1s"})])
    assert messages_at(payload, f"{GROUP}.ReschedulePolicy.Interval") == [
        "must be at least 15s when Attempts is limited, got 1s"
    ]
    # ...while the service defaults reschedule without limit.
    normalize_job(job(TaskGroups=[group(ReschedulePolicy={"Interval": "1s"})]))


@pytest.mark.parametrize("job_type", ["system", "sysbatch"])
def test_reschedule_is_not_allowed_for_system_jobs(job_type: str) -> None:
    message = f"reschedule policy is not allowed for {job_type} jobs"
    assert messages_at(job(Type=job_type, TaskGroups=[group(ReschedulePolicy={})]), f"{GROUP}.ReschedulePolicy") == [
        message
    ]
    assert messages_at(job(Type=job_type, Reschedule={}), "Job.Reschedule") == [message]


@pytest.mark.parametrize(
    ("migrate", "field", "message"),
    [
        ({"MaxParallel": -2}, "MaxParallel", "must not be negative, got -2"),
        ({"HealthCheck": "manual"}, "HealthCheck", 'must be one of checks, task_states, got "manual"'),
        (
            {"MinHealthyTime": "10m"},
            "MinHealthyTime",
            "must be less than HealthyDeadline (5m), got 10m",
        ),
    ],
)
def test_migrate_rules(migrate: dict[str, Any], field: str, message: str) -> None:
    assert message in messages_at(job(TaskGroups=[group(Migrate=migrate)]), f"{GROUP}.Migrate.{field}")


@pytest.mark.parametrize("job_type", ["batch", "system", "sysbatch"])
def test_migrate_is_only_for_service_jobs(job_type: str) -> None:
    payload = job(Type=job_type, TaskGroups=[group(Migrate={})])
    assert messages_at(payload, f"{GROUP}.Migrate") == [f"migrate block is not allowed for {job_type} jobs"]
