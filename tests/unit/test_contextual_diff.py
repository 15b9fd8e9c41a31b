"""The contextual job diff (Nomad's Job.Diff(other, true), as plan and version history ask for
it): an edited nested block lists its unchanged fields with Type None; the job's, groups' and
tasks' own fields, and unchanged blocks, stay out; the CLI prints those fields without a marker."""

from __future__ import annotations

from typing import cast

import pytest

from app.cli.jobs.diff_output import format_job_diff
from app.jobspec.diff import job_diff
from app.wire import job_diff as wire_diff
from app.wire.job import FieldDiffJson, JobDiffJson, ObjectDiffJson, TaskDiffJson

pytestmark = pytest.mark.unit


def spec(
    cpu: int = 100, memory: int = 256, tags: tuple[str, ...] = ("a", "b"), priority: int = 50
) -> dict[str, object]:
    task = {
        "Name": "t",
        "Driver": "mock",
        "KillTimeout": 5,
        "Resources": {"CPU": cpu, "MemoryMB": memory, "Cores": 0},
        "LogConfig": {"MaxFiles": 10, "MaxFileSizeMB": 10},
        "Services": [{"Name": "web", "PortLabel": "http", "Tags": list(tags)}],
    }
    return {"ID": "web", "Priority": priority, "Region": "global", "TaskGroups": [{"Name": "g", "Tasks": [task]}]}


def only_task(diff: JobDiffJson) -> TaskDiffJson:
    [group] = diff["TaskGroups"] or []
    [task] = group["Tasks"] or []
    return task


def by_name(objects: list[ObjectDiffJson] | None, name: str) -> ObjectDiffJson:
    [found] = [o for o in objects or [] if o["Name"] == name]
    return found


def rows(fields: list[FieldDiffJson] | None) -> list[tuple[str, str, str, str]]:
    return [(f["Type"], f["Name"], f["Old"], f["New"]) for f in fields or []]


def test_an_edited_block_keeps_its_unchanged_fields_as_none() -> None:
    diff = job_diff(spec(), spec(cpu=200), contextual=True)
    resources = by_name(only_task(diff)["Objects"], "Resources")
    assert resources["Type"] == "Edited"
    assert rows(resources["Fields"]) == [
        ("Edited", "CPU", "100", "200"),
        ("None", "Cores", "0", "0"),
        ("None", "MemoryMB", "256", "256"),
    ]


def test_without_contextual_only_the_change_is_listed() -> None:
    resources = by_name(only_task(job_diff(spec(), spec(cpu=200)))["Objects"], "Resources")
    assert rows(resources["Fields"]) == [("Edited", "CPU", "100", "200")]


def test_unchanged_blocks_and_the_task_and_job_fields_stay_out() -> None:
    diff = job_diff(spec(), spec(cpu=200, priority=60), contextual=True)
    assert rows(diff["Fields"]) == [("Edited", "Priority", "50", "60")]  # not Region or ID
    task = only_task(diff)
    assert task["Fields"] is None  # Driver and KillTimeout are unchanged task fields
    assert [o["Name"] for o in task["Objects"] or []] == ["Resources"]  # not LogConfig or Services


def test_a_string_list_in_an_edited_block_lists_the_values_kept() -> None:
    diff = job_diff(spec(), spec(tags=("a", "c")), contextual=True)
    service = by_name(only_task(diff)["Objects"], "Services")
    assert rows(service["Fields"]) == [
        ("None", "Name", "web", "web"),
        ("None", "PortLabel", "http", "http"),
        ("None", "Tags", "a", "a"),
        ("Deleted", "Tags", "b", ""),
        ("Added", "Tags", "", "c"),
    ]


def test_a_job_without_change_is_none_either_way() -> None:
    assert job_diff(spec(), spec(), contextual=True)["Type"] == "None"
    [group] = job_diff(spec(), spec(), contextual=True)["TaskGroups"] or []
    assert (group["Type"], group["Fields"], group["Objects"]) == ("None", None, None)
    assert only_task(job_diff(spec(), spec()))["Type"] == "None"


def two_groups(meta: dict[str, str], env: dict[str, str], cpu: int = 100) -> dict[str, object]:
    job = spec(cpu=cpu)
    web = {"Name": "web", "Meta": meta, "Tasks": [{"Name": "w", "Driver": "mock", "Env": env}]}
    groups = job["TaskGroups"]
    assert isinstance(groups, list)
    return {**job, "Meta": meta, "TaskGroups": [*groups, web]}


def test_unchanged_groups_and_tasks_are_listed_as_none() -> None:
    """Nomad's taskGroupDiffs and taskDiffs list every group and task, the unchanged ones
    with Type None (no fields, no annotations), so a reader sees what stays."""
    diff = job_diff(two_groups({}, {}), two_groups({}, {}, cpu=200), contextual=True)
    assert diff["Type"] == "Edited"
    groups = {g["Name"]: g for g in diff["TaskGroups"] or []}
    assert (groups["g"]["Type"], groups["web"]["Type"]) == ("Edited", "None")
    [unchanged] = groups["web"]["Tasks"] or []
    assert (unchanged["Type"], unchanged["Name"], unchanged["Annotations"]) == ("None", "w", None)
    assert unchanged["Fields"] is None and unchanged["Objects"] is None


def test_meta_and_env_are_flattened_into_fields() -> None:
    """Nomad's flatmap: a map[string]string field is one field per key, `Meta[key]`."""
    before = two_groups({"owner": "a", "tier": "1"}, {"PORT": "80"})
    after = two_groups({"owner": "b", "team": "x", "tier": "1"}, {"PORT": "80", "MODE": "prod"})
    diff = job_diff(before, after, contextual=True)
    expected = [("Edited", "Meta[owner]", "a", "b"), ("Added", "Meta[team]", "", "x")]
    assert rows(diff["Fields"]) == expected and diff["Objects"] is None
    web = next(g for g in diff["TaskGroups"] or [] if g["Name"] == "web")
    assert rows(web["Fields"]) == expected and web["Objects"] is None
    [task] = web["Tasks"] or []
    assert rows(task["Fields"]) == [("Added", "Env[MODE]", "", "prod")]
    removed = job_diff(before, two_groups({}, {"PORT": "80"}))
    assert rows(removed["Fields"]) == [("Deleted", "Meta[owner]", "a", ""), ("Deleted", "Meta[tier]", "1", "")]


def test_an_edited_block_lists_its_unchanged_meta_keys() -> None:
    def with_service(port: str) -> dict[str, object]:
        job = spec()
        service = {"Name": "api", "PortLabel": port, "Meta": {"zone": "a"}}
        group = {"Name": "g", "Tasks": [], "Services": [service]}
        return {**job, "TaskGroups": [group]}

    [group] = job_diff(with_service("http"), with_service("grpc"), contextual=True)["TaskGroups"] or []
    service = by_name(group["Objects"], "Services")
    assert ("None", "Meta[zone]", "a", "a") in rows(service["Fields"])


def test_the_cli_prints_unchanged_groups_and_tasks_without_a_marker() -> None:
    diff = job_diff(two_groups({}, {}), two_groups({"owner": "a"}, {}), contextual=True)
    text = format_job_diff(cast(wire_diff.JobDiffJson, diff))
    assert text.startswith('+/- Job: "web"\n+   Meta[owner]: "a"\n')
    assert '    Task Group: "g"\n      Task: "t"\n' in text  # unchanged: no marker, aligned
    assert '+/- Task Group: "web"\n  + Meta[owner]: "a"\n    Task: "w"\n' in text


def test_the_cli_prints_unchanged_fields_without_a_marker() -> None:
    # The CLI reads the API's JSON with its own TypedDicts (app.wire.job_diff): the same keys.
    text = format_job_diff(cast(wire_diff.JobDiffJson, job_diff(spec(), spec(memory=512), contextual=True)))
    assert (
        '+/- Task: "t" (forces create/destroy update)\n'
        "    +/- Resources {\n"
        '          CPU:      "100"\n'
        '          Cores:    "0"\n'
        '      +/- MemoryMB: "256" => "512"\n'
        "        }"
    ) in text
