"""A driver's exit detail reaches the task's Terminated event as Nomad records it: an OOM kill
gives `Exit Code: 137, Exit Message: "OOM Killed"` and Details.oom_killed; a handle that
explains nothing (raw_exec, mock) keeps the plain event."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from client.drivers import DEFAULT_KILL_SIGNAL, ExitDetail, Handle, TaskSpec
from client.tasks.restarts import RestartPolicy, RestartTracker
from client.tasks.task_runner import TaskRunner
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit


class Exited:
    def __init__(self, code: int, detail: ExitDetail | None) -> None:
        self.code, self.detail = code, detail

    def wait(self, timeout_s: float) -> int | None:
        return self.code

    def kill(self, timeout_s: float, signal_name: str = DEFAULT_KILL_SIGNAL) -> int:
        return self.code

    def state(self) -> dict[str, Any]:
        return {}

    def pids(self) -> list[int]:
        return []

    def signal(self, signum: int) -> None:
        return None


class Explained(Exited):
    def exit_detail(self) -> ExitDetail:
        assert self.detail is not None
        return self.detail


class Once:
    name = "once"

    def __init__(self, handle: Handle) -> None:
        self.handle = handle

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle:
        return self.handle

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None:
        return None


def terminated(tmp_path: Path, handle: Handle) -> dict[str, Any]:
    spec = TaskSpec(name="t", driver="once", config={}, env={}, kill_timeout_s=1.0)
    policy = RestartPolicy.of({"Attempts": 0, "Interval": 60_000_000_000, "Delay": 0, "Mode": "fail"})
    runner = TaskRunner(spec, Once(handle), RestartTracker(policy, True), tmp_path, tmp_path, lambda: None)
    runner.start()
    assert wait_for(lambda: runner.dead, 10)
    return next(e for e in runner.state["Events"] if e["Type"] == "Terminated")


def test_an_oom_kill_is_reported_as_nomad_does(tmp_path: Path) -> None:
    event = terminated(tmp_path, Explained(137, ExitDetail(oom_killed=True, message="OOM Killed")))
    assert event["DisplayMessage"] == 'Exit Code: 137, Exit Message: "OOM Killed"'
    assert (event["ExitCode"], event["Message"]) == (137, "OOM Killed")
    assert event["Details"] == {"exit_code": "137", "oom_killed": "true", "exit_message": "OOM Killed"}


def test_a_handle_that_explains_nothing_keeps_the_plain_event(tmp_path: Path) -> None:
    event = terminated(tmp_path, Exited(3, None))
    assert (event["DisplayMessage"], event["ExitCode"]) == ("Exit Code: 3", 3)
    assert "Details" not in event
    plain = terminated(tmp_path, Explained(0, ExitDetail()))
    assert plain["DisplayMessage"] == "Exit Code: 0" and "Details" not in plain
