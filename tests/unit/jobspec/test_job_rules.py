"""Job, group and task level rules: each failing case names the exact field path."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import FieldError, JobSpecError, normalize_job
from tests.support.jobspec_builders import errors_of, group, job, messages_at, task

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("payload", "path", "message"),
    [
        ({"TaskGroups": [group()]}, "Job.ID", "is required"),
        (job(ID=""), "Job.ID", "is required"),
        (job(ID="my job"), "Job.ID", "must not contain spaces"),
        (job(ID="a\x00b"), "Job.ID", "must not contain null characters"),
        (job(ID="x" * 129), "Job.ID", "must be at most 128 characters, got 129"),
        (job(Type="daemon"), "Job.Type", 'must be one of service, batch, system, sysbatch, got "daemon"'),
        (job(Priority=0), "Job.Priority", "must be between 1 and 100, got 0"),
        (job(Priority=200), "Job.Priority", "must be between 1 and 100, got 200"),
        (job(Datacenters=[]), "Job.Datacenters", "must contain at least one datacenter"),
        (job(Datacenters=["dc1", ""]), "Job.Datacenters[1]", "must not be empty"),
        (job(TaskGroups=[]), "Job.TaskGroups", "must contain at least one task group"),
        (job(TaskGroups=[group(Name="")]), "Job.TaskGroups[0].Name", "is required"),
        (
            job(TaskGroups=[group(Name="a"), group(Name="b"), group(Name="a")]),
            "Job.TaskGroups[2].Name",
            'duplicate name "a"; names must be unique within the job',
        ),
        (job(TaskGroups=[group(Count=-1)]), "Job.TaskGroups[0].Count", "must not be negative, got -1"),
        (job(Type="system", TaskGroups=[group(Count=-2)]), "Job.TaskGroups[0].Count", "must not be negative, got -2"),
        (job(TaskGroups=[group(Tasks=[])]), "Job.TaskGroups[0].Tasks", "must contain at least one task"),
        (job(TaskGroups=[{"Name": "web"}]), "Job.TaskGroups[0].Tasks", "must contain at least one task"),
        (job(TaskGroups=[group(Tasks=[task(Name="")])]), "Job.TaskGroups[0].Tasks[0].Name", "is required"),
        (
            job(TaskGroups=[group(Tasks=[task(), task()])]),
            "Job.TaskGroups[0].Tasks[1].Name",
            'duplicate name "server"; names must be unique within the group',
        ),
        (job(TaskGroups=[group(Tasks=[{"Name": "t"}])]), "Job.TaskGroups[0].Tasks[0].Driver", "is required"),
        (job(TaskGroups=[group(Tasks=[task(Driver="")])]), "Job.TaskGroups[0].Tasks[0].Driver", "is required"),
    ],
)
def test_job_group_and_task_rules(payload: dict[str, Any], path: str, message: str) -> None:
    assert message in messages_at(payload, path)


def test_task_names_may_repeat_across_groups() -> None:
    normalize_job(job(TaskGroups=[group(Name="a"), group(Name="b")]))


def test_datacenter_globs_are_allowed() -> None:
    assert normalize_job(job(Datacenters=["dc*", "eu-?"]))["Datacenters"] == ["dc*", "eu-?"]


@pytest.mark.parametrize(
    ("payload", "path", "message"),
    [
        (job(Priority="high"), "Job.Priority", "must be an integer, got string"),
        (job(Priority=True), "Job.Priority", "must be an integer, got boolean"),
        (job(Priority=50.0), "Job.Priority", "must be an integer, got number"),
        (job(ID=7), "Job.ID", "must be a string, got integer"),
        (job(AllAtOnce="yes"), "Job.AllAtOnce", "must be a boolean, got string"),
        (job(Stop=1), "Job.Stop", "must be a boolean, got integer"),
        (job(Datacenters="dc1"), "Job.Datacenters", "must be a list, got string"),
        (job(Datacenters=["dc1", 2]), "Job.Datacenters[1]", "must be a string, got integer"),
        (job(Meta={"a": 1}), "Job.Meta.a", "must be a string, got integer"),
        (job(Meta={"team.name": None}), 'Job.Meta["team.name"]', "must be a string, got null"),
        (job(Meta=["a"]), "Job.Meta", "must be an object, got list"),
        (job(TaskGroups={"web": {}}), "Job.TaskGroups", "must be a list, got object"),
        (job(TaskGroups=["web"]), "Job.TaskGroups[0]", "must be an object, got string"),
        (job(TaskGroups=[group(Count="3")]), "Job.TaskGroups[0].Count", "must be an integer, got string"),
        (job(TaskGroups=[group(Count=False)]), "Job.TaskGroups[0].Count", "must be an integer, got boolean"),
        (
            job(TaskGroups=[group(Tasks=[task(Driver=["docker"])])]),
            "Job.TaskGroups[0].Tasks[0].Driver",
            "must be a string, got list",
        ),
        (
            job(TaskGroups=[group(Tasks=[task(Config="image=redis")])]),
            "Job.TaskGroups[0].Tasks[0].Config",
            "must be an object, got string",
        ),
        (
            job(TaskGroups=[group(Tasks=[task(Env={"A": 1})])]),
            "Job.TaskGroups[0].Tasks[0].Env.A",
            "must be a string, got integer",
        ),
        (
            job(TaskGroups=[group(Tasks=[task(Resources=[])])]),
            "Job.TaskGroups[0].Tasks[0].Resources",
            "must be an object, got list",
        ),
        (
            job(TaskGroups=[group(Tasks=[task(Resources={"CPU": "500"})])]),
            "Job.TaskGroups[0].Tasks[0].Resources.CPU",
            "must be an integer, got string",
        ),
        (
            job(TaskGroups=[group(Tasks=[task(Resources={"MemoryMB": True})])]),
            "Job.TaskGroups[0].Tasks[0].Resources.MemoryMB",
            "must be an integer, got boolean",
        ),
        (job(Update="rolling"), "Job.Update", "must be an object, got string"),
        (job(Constraints=[{"LTarget": 1}]), "Job.Constraints[0].LTarget", "must be a string, got integer"),
    ],
)
def test_wrong_types_are_reported_with_their_path(payload: dict[str, Any], path: str, message: str) -> None:
    assert messages_at(payload, path) == [message]


def test_payload_must_be_an_object() -> None:
    assert errors_of(["not", "a", "job"]) == [FieldError("Job", "must be an object, got list")]
    assert errors_of(None) == [FieldError("Job", "must be an object, got null")]


def test_every_problem_is_collected_at_once() -> None:
    payload = {
        "ID": "bad id",
        "Priority": 500,
        "Type": "service",
        "Datacenters": [],
        "TaskGroups": [
            {"Name": "web", "Count": -1, "Tasks": [{"Name": "a"}, {"Name": "a", "Driver": "exec"}]},
            {"Name": "web", "Tasks": []},
        ],
    }
    assert errors_of(payload) == [
        FieldError("Job.ID", "must not contain spaces"),
        FieldError("Job.Priority", "must be between 1 and 100, got 500"),
        FieldError("Job.Datacenters", "must contain at least one datacenter"),
        FieldError("Job.TaskGroups[1].Name", 'duplicate name "web"; names must be unique within the job'),
        FieldError("Job.TaskGroups[0].Count", "must not be negative, got -1"),
        FieldError("Job.TaskGroups[0].Tasks[1].Name", 'duplicate name "a"; names must be unique within the group'),
        FieldError("Job.TaskGroups[0].Tasks[0].Driver", "is required"),
        FieldError("Job.TaskGroups[1].Tasks", "must contain at least one task"),
    ]


def test_type_errors_and_rule_errors_are_reported_together() -> None:
    payload = job(
        Priority="high",
        Datacenters=[],
        TaskGroups=[
            group(Count="many", Tasks=[task(Driver=""), task(Name="x", Resources={"CPU": True, "MemoryMB": 1})]),
            7,
        ],
    )
    assert set(errors_of(payload)) == {
        FieldError("Job.Priority", "must be an integer, got string"),
        FieldError("Job.TaskGroups[0].Count", "must be an integer, got string"),
        FieldError("Job.TaskGroups[0].Tasks[1].Resources.CPU", "must be an integer, got boolean"),
        FieldError("Job.TaskGroups[1]", "must be an object, got integer"),
        FieldError("Job.Datacenters", "must contain at least one datacenter"),
        FieldError("Job.TaskGroups[0].Tasks[0].Driver", "is required"),
        FieldError("Job.TaskGroups[0].Tasks[1].Resources.MemoryMB", "must be at least 10, got 1"),
    }


def test_ill_typed_values_do_not_cause_follow_up_errors() -> None:
    # A discarded ID must not also be reported as missing, and a discarded Type must not
    # make type-specific blocks look misplaced.
    payload = job(ID=5, Type=["batch"], Periodic={"Spec": "@daily"}, TaskGroups=[group(Name=3)])
    assert errors_of(payload) == [
        FieldError("Job.ID", "must be a string, got integer"),
        FieldError("Job.Type", "must be a string, got list"),
        FieldError("Job.TaskGroups[0].Name", "must be a string, got integer"),
    ]


def test_error_string_joins_all_problems() -> None:
    with pytest.raises(JobSpecError) as caught:
        normalize_job(job(ID="", Priority=0))
    assert str(caught.value) == "Job.ID: is required; Job.Priority: must be between 1 and 100, got 0"


def test_group_count_is_bounded_by_nomads_job_max_count() -> None:
    assert normalize_job(job(TaskGroups=[group(Count=50_000)]))["TaskGroups"][0]["Count"] == 50_000
    assert messages_at(job(TaskGroups=[group(Count=3_000_000_000)]), "Job.TaskGroups[0].Count") == [
        "must be at most 50000 (Nomad's job_max_count), got 3000000000"
    ]
