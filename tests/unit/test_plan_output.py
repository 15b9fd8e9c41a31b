"""The job diff and the `corral job plan` text, without a server."""

from __future__ import annotations

from typing import Any

import pytest

from app.cli.jobs.plan_output import has_changes, render
from app.jobspec.diff import job_diff

pytestmark = pytest.mark.unit


def spec(priority: int = 50, cpu: int = 100, dcs: tuple[str, ...] = ("dc1",)) -> dict[str, Any]:
    return {
        "ID": "web",
        "Priority": priority,
        "Datacenters": list(dcs),
        "Version": 3,
        "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock", "Resources": {"CPU": cpu}}]}],
    }


def test_diff_of_new_unchanged_and_edited_jobs() -> None:
    assert job_diff(None, spec())["Type"] == "Added"
    assert job_diff(spec(), {**spec(), "Version": 9})["Type"] == "None"  # server fields never count
    edited: Any = job_diff(spec(), spec(priority=60, cpu=200, dcs=("dc1", "dc2")))
    assert edited["Type"] == "Edited"
    fields = {(f["Name"], f["Type"], f["Old"], f["New"]) for f in edited["Fields"]}
    assert fields == {("Priority", "Edited", "50", "60"), ("Datacenters", "Added", "", "dc2")}
    [task] = edited["TaskGroups"][0]["Tasks"]
    assert task["Annotations"] == ["forces create/destroy update"]
    assert task["Objects"][0]["Name"] == "Resources"


def response(place: int, ignore: int, preempted: list[dict[str, str]] | None) -> dict[str, Any]:
    return {
        "Annotations": {"DesiredTGUpdates": {"g": {"Place": place, "Ignore": ignore}}, "PreemptedAllocs": preempted},
        "FailedTGAllocs": None,
        "JobModifyIndex": 7,
        "Diff": job_diff(None, spec()),
    }


def test_plan_text_follows_nomads_layout() -> None:
    victim = {"ID": "ddef9521-0000-4000-8000-000000000000", "JobID": "my-batch", "TaskGroup": "analytics"}
    text = render(response(1, 0, [victim]), "web", "web.hcl")
    assert '+ Job: "web"\n+ Task Group: "g" (1 create)\n  + Task: "t" (forces create)' in text
    assert "Scheduler dry-run:\n- All tasks successfully allocated.\n\nPreemptions:\n\n" in text
    assert "Alloc ID  Job ID    Task Group\nddef9521  my-batch  analytics" in text
    assert "corral job run -check-index 7 web.hcl" in text
    assert has_changes(response(1, 0, None)) and not has_changes(response(0, 2, None))


def test_failed_placements_are_explained() -> None:
    failed = {"g": {"NodesEvaluated": 2, "NodesExhausted": 2, "DimensionExhausted": {"cpu": 2}, "CoalescedFailures": 1}}
    text = render({**response(2, 0, None), "FailedTGAllocs": failed}, "web", "web.hcl")
    assert 'Task Group "g" (failed to place 2 allocations):' in text
    assert 'Dimension "cpu" exhausted on 2 nodes' in text


def test_an_unchanged_job_lists_its_groups_and_tasks_without_markers() -> None:
    """Nomad's plan of a job run again as it is: no markers, the group's counts on its line."""
    unchanged = {**response(0, 2, None), "Diff": job_diff(spec(), spec(), contextual=True)}
    text = render(unchanged, "web", "web.hcl")
    assert text.startswith('Job: "web"\nTask Group: "g" (2 ignore)\n  Task: "t"\n\nScheduler dry-run:')
    assert not has_changes(unchanged)


def test_group_counts_follow_nomads_update_type_order() -> None:
    counts = {"g": {"Place": 1, "Stop": 2, "Ignore": 3, "DestructiveUpdate": 1}}
    edited = {**response(0, 0, None), "Diff": job_diff(spec(), spec(cpu=200), contextual=True)}
    edited["Annotations"] = {"DesiredTGUpdates": counts, "PreemptedAllocs": None}
    text = render(edited, "web", "web.hcl")
    assert '+/- Task Group: "g" (1 create, 1 create/destroy update, 2 destroy, 3 ignore)' in text
