from __future__ import annotations

import pytest

from app.jobspec import FieldError, JobSpecError, normalize_job, parse_duration
from tests.support.jobspec_builders import group, job, messages_at, task

pytestmark = pytest.mark.unit

SECOND = 1_000_000_000


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("10s", 10 * SECOND),
        ("1m30s", 90 * SECOND),
        ("1h", 3600 * SECOND),
        ("500ms", SECOND // 2),
        ("1.5h", 5400 * SECOND),
        (".5s", SECOND // 2),
        ("2h45m3s", (2 * 3600 + 45 * 60 + 3) * SECOND),
        ("1us", 1_000),
        ("1µs", 1_000),
        ("7ns", 7),
        ("0", 0),
        ("+5s", 5 * SECOND),
        (0, 0),
        (15 * SECOND, 15 * SECOND),
    ],
)
def test_parse_duration_accepts_go_strings_and_nanoseconds(value: object, expected: int) -> None:
    assert parse_duration(value, "Job.X") == expected


@pytest.mark.parametrize("value", ["", "10", "5x", "s", "1h-5m", "10 s", ".s", "-5s", -1, True, 1.5, None, [1]])
def test_parse_duration_rejects_bad_input_naming_the_field(value: object) -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_duration(value, "Job.TaskGroups[0].RestartPolicy.Delay")
    [error] = caught.value.errors
    assert error.field == "Job.TaskGroups[0].RestartPolicy.Delay"
    assert str(caught.value).startswith("Job.TaskGroups[0].RestartPolicy.Delay: ")


def test_parse_duration_messages() -> None:
    with pytest.raises(JobSpecError) as caught:
        parse_duration("-5s", "Job.F")
    assert caught.value.errors == [FieldError("Job.F", 'must not be negative, got "-5s"')]
    with pytest.raises(JobSpecError) as caught:
        parse_duration(True, "Job.F")
    assert caught.value.errors[0].message.endswith("got boolean")


def test_parse_duration_rejects_values_beyond_int64() -> None:
    with pytest.raises(JobSpecError, match="too large"):
        parse_duration("3000000h", "Job.F")


def test_durations_in_both_forms_become_nanoseconds() -> None:
    payload = job(
        TaskGroups=[
            group(
                RestartPolicy={"Interval": "1h", "Delay": 20 * SECOND},
                Tasks=[task(KillTimeout="1m30s", ShutdownDelay=SECOND)],
            )
        ],
        Update={"MinHealthyTime": "30s", "HealthyDeadline": 360 * SECOND},
    )
    out = normalize_job(payload)
    restart = out["TaskGroups"][0]["RestartPolicy"]
    assert restart["Interval"] == 3600 * SECOND
    assert restart["Delay"] == 20 * SECOND
    first_task = out["TaskGroups"][0]["Tasks"][0]
    assert first_task["KillTimeout"] == 90 * SECOND
    assert first_task["ShutdownDelay"] == SECOND
    assert out["Update"]["MinHealthyTime"] == 30 * SECOND
    assert out["Update"]["HealthyDeadline"] == 360 * SECOND


@pytest.mark.parametrize(
    ("payload", "path"),
    [
        (job(Update={"Stagger": "soon"}), "Job.Update.Stagger"),
        (job(Update={"ProgressDeadline": -1}), "Job.Update.ProgressDeadline"),
        (job(TaskGroups=[group(RestartPolicy={"Interval": "1x"})]), "Job.TaskGroups[0].RestartPolicy.Interval"),
        (job(TaskGroups=[group(ReschedulePolicy={"MaxDelay": True})]), "Job.TaskGroups[0].ReschedulePolicy.MaxDelay"),
        (job(TaskGroups=[group(Migrate={"HealthyDeadline": "-1m"})]), "Job.TaskGroups[0].Migrate.HealthyDeadline"),
        (job(TaskGroups=[group(Tasks=[task(KillTimeout="forever")])]), "Job.TaskGroups[0].Tasks[0].KillTimeout"),
        (job(TaskGroups=[group(Tasks=[task(ShutdownDelay=-5)])]), "Job.TaskGroups[0].Tasks[0].ShutdownDelay"),
        (job(TaskGroups=[group(Disconnect={"LostAfter": "1d"})]), "Job.TaskGroups[0].Disconnect.LostAfter"),
        (
            job(TaskGroups=[group(Disconnect={"StopOnClientAfter": 1.5})]),
            "Job.TaskGroups[0].Disconnect.StopOnClientAfter",
        ),
    ],
)
def test_bad_durations_are_reported_at_their_path(payload: object, path: str) -> None:
    assert messages_at(payload, path)


def test_disconnect_durations_are_converted() -> None:
    out = normalize_job(job(TaskGroups=[group(Disconnect={"LostAfter": "1h", "Replace": True})]))
    assert out["TaskGroups"][0]["Disconnect"] == {"LostAfter": 3600 * SECOND, "Replace": True}
