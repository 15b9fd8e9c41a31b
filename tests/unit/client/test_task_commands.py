"""Commands run to completion in a task's context (script checks): output kept, a command past
its timeout killed with every process it started, drivers without processes refused."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from client.tasks.task_commands import CommandFailed, TaskContext, run_in_task
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit


def host(tmp_path: Path, driver: str = "raw_exec") -> TaskContext:
    return TaskContext(driver, tmp_path, {"PATH": "/usr/bin:/bin", "WHO": "task"})


def test_a_command_runs_in_the_task_directory_with_its_environment(tmp_path: Path) -> None:
    done = run_in_task(host(tmp_path), ["/bin/sh", "-c", "echo $WHO in $(pwd); echo oops >&2; exit 3"], 10)
    assert (done.exit_code, done.timed_out) == (3, False)
    assert done.output == f"task in {tmp_path}\noops\n"


def test_a_command_past_its_timeout_is_killed_with_its_children(tmp_path: Path) -> None:
    script = f"sleep 300 & echo $! > {tmp_path}/child; echo started; wait"
    done = run_in_task(host(tmp_path), ["/bin/sh", "-c", script], 0.5)
    assert done.timed_out and done.output == "started\n"
    child = int((tmp_path / "child").read_text())
    assert wait_for(lambda: not _alive(child), 10)


def test_a_missing_command_or_a_mock_task_is_a_failure_to_start(tmp_path: Path) -> None:
    with pytest.raises(CommandFailed):
        run_in_task(host(tmp_path), ["/nonexistent/check"], 5)
    with pytest.raises(CommandFailed, match="mock driver cannot run commands in its tasks"):
        run_in_task(host(tmp_path, "mock"), ["/bin/true"], 5)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
