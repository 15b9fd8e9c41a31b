"""shutdown_delay: a stopped allocation waits out the group's delay, then each task's, before
the kill signal (Nomad's "Waiting for shutdown delay" event); no_shutdown_delay skips both."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from client.allocs.alloc_runner import AllocRunner
from client.drivers import available
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit
NANOS = 1_000_000_000


def _alloc(group_delay_s: float, task_delay_s: float) -> dict[str, Any]:
    task = {
        "Name": "web",
        "Driver": "mock",
        "Config": {"run_for": "10m"},
        "ShutdownDelay": int(task_delay_s * NANOS),
        "LogConfig": {"Disabled": True},
    }
    group = {"Name": "g", "Tasks": [task], "ShutdownDelay": int(group_delay_s * NANOS)}
    return {
        "ID": "a1b2c3d4-0000-0000-0000-0000000000c1",
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "Job": {"ID": "j", "Type": "service", "TaskGroups": [group]},
    }


def _running(tmp_path: Path, body: dict[str, Any]) -> AllocRunner:
    runner = AllocRunner(body, tmp_path / body["ID"], available(("mock",)), lambda _: None, node={"Name": "n"})
    runner.start()
    assert wait_for(lambda: runner.client_status == "running", 30), runner.update()
    return runner


def _event(runner: AllocRunner, kind: str) -> dict[str, Any]:
    return next(e for e in runner.tasks["web"].state["Events"] if e["Type"] == kind)


def test_group_then_task_delay_come_before_the_kill(tmp_path: Path) -> None:
    runner = _running(tmp_path, _alloc(0.6, 0.4))
    stopped_ns = time.time_ns()
    runner.stop()
    assert wait_for(lambda: runner.terminal, 30), runner.update()
    waiting, killing = _event(runner, "Waiting for shutdown delay"), _event(runner, "Killing")
    assert waiting["DisplayMessage"] == "Waiting for shutdown_delay of 0.4s before killing the task."
    assert waiting["Time"] - stopped_ns >= 0.6 * NANOS  # the group's delay came first
    assert killing["Time"] - waiting["Time"] >= 0.4 * NANOS
    assert runner.client_status == "complete"


def test_no_shutdown_delay_skips_both(tmp_path: Path) -> None:
    runner = _running(tmp_path, _alloc(600, 600))
    runner.stop(no_shutdown_delay=True)
    assert wait_for(lambda: runner.terminal, 30), runner.update()
    skipped = _event(runner, "Skipping shutdown delay")
    assert skipped["DisplayMessage"] == "Skipping shutdown_delay of 600s before killing the task."
    assert all(e["Type"] != "Waiting for shutdown delay" for e in runner.tasks["web"].state["Events"])
