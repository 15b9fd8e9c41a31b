"""The allocation runner with the in-process `mock` driver (no processes): the directory layout,
lifecycle gates in the order Nomad's coordinator opens them, a failed prestart task failing the
allocation while its poststop task still runs, the payload file, refused task names."""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import Any

import pytest

from client.allocs.alloc_runner import AllocRunner
from client.drivers import available
from client.tasks.task_runner import NotRunning
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit

NO_RESTART = {"Attempts": 0, "Interval": 60_000_000_000, "Delay": 0, "Mode": "fail"}


def mock(name: str, hook: str = "", sidecar: bool = False, **config: Any) -> dict[str, Any]:
    task: dict[str, Any] = {"Name": name, "Driver": "mock", "Config": config, "RestartPolicy": NO_RESTART}
    if hook:
        task["Lifecycle"] = {"Hook": hook, "Sidecar": sidecar}
    return task


def alloc(tasks: list[dict[str, Any]], **job: Any) -> dict[str, Any]:
    return {
        "ID": "a1b2c3d4-0000-0000-0000-000000000000",
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "Job": {"ID": "j", "Type": "batch", "TaskGroups": [{"Name": "g", "Tasks": tasks}], **job},
    }


def run(tmp_path: Path, body: dict[str, Any]) -> AllocRunner:
    node = {"Name": "n1", "SecretID": "node-s3cret"}  # what agent.py passes: its registration body
    runner = AllocRunner(body, tmp_path / body["ID"], available(("mock",)), lambda _: None, node=node)
    runner.start()
    assert wait_for(lambda: runner.terminal, 30), runner.update()
    return runner


def events(runner: AllocRunner, task: str) -> list[str]:
    return [e["Type"] for e in runner.tasks[task].state["Events"]]


def test_main_waits_for_prestart_and_poststop_runs_last(tmp_path: Path) -> None:
    tasks = [
        mock("setup", "prestart", run_for="300ms"),
        mock("proxy", "prestart", sidecar=True),
        mock("main", run_for="100ms"),
        mock("announce", "poststart", run_for="10ms"),
        mock("cleanup", "poststop", run_for="10ms"),
    ]
    runner = run(tmp_path, alloc(tasks))
    assert runner.client_status == "complete", runner.update()
    state = {name: t.state for name, t in runner.tasks.items()}
    assert state["setup"]["FinishedAt"] <= state["main"]["StartedAt"]
    assert state["proxy"]["StartedAt"] <= state["main"]["StartedAt"] <= state["announce"]["StartedAt"]
    assert state["cleanup"]["StartedAt"] >= max(s["FinishedAt"] for n, s in state.items() if n != "cleanup")
    assert "Main Tasks Dead" in events(runner, "proxy")  # the sidecar, killed once main was done
    for directory in ("alloc/data", "alloc/logs", "alloc/tmp", "main/local", "main/secrets", "main/tmp"):
        assert (runner.dir / directory).is_dir(), directory


def test_failed_prestart_fails_the_allocation_main_never_starts_poststop_still_runs(tmp_path: Path) -> None:
    setup = mock("setup", "prestart", run_for="10ms", exit_code=2)
    tasks = [setup, mock("main"), mock("cleanup", "poststop", run_for="10ms")]
    runner = run(tmp_path, alloc(tasks))
    assert runner.client_status == "failed"
    assert runner.tasks["setup"].state["Failed"] is True
    assert "Started" not in events(runner, "main") and "Sibling Task Failed" in events(runner, "main")
    assert "Started" in events(runner, "cleanup") and runner.tasks["cleanup"].state["Failed"] is False


def test_dispatch_payload_lands_in_local(tmp_path: Path) -> None:
    task = {**mock("main", run_for="10ms"), "DispatchPayload": {"File": "in/data.bin"}}
    runner = run(tmp_path, alloc([task], Payload=base64.b64encode(b"\x00payload").decode()))
    assert (runner.dir / "main" / "local" / "in" / "data.bin").read_bytes() == b"\x00payload"


@pytest.mark.parametrize("name", ["../escape", "a/b", ".."])
def test_a_task_name_that_is_a_path_fails_the_allocation_and_writes_nothing_outside(tmp_path: Path, name: str) -> None:
    runner = run(tmp_path, alloc([mock(name)]))
    assert runner.client_status == "failed" and "task name" in runner.description
    assert sorted(p.name for p in tmp_path.iterdir()) == [runner.id]


def test_an_unknown_hook_or_escaping_payload_path_fails_the_allocation(tmp_path: Path) -> None:
    assert "lifecycle hook" in run(tmp_path / "a", alloc([mock("t", "midstart")])).description
    escaping = {**mock("t"), "DispatchPayload": {"File": "../../secrets/x"}}
    assert "dispatch_payload" in run(tmp_path / "b", alloc([escaping], Payload="eA==")).description


def test_a_dead_leader_kills_its_siblings(tmp_path: Path) -> None:
    leader = {**mock("leader", run_for="50ms"), "Leader": True}
    runner = run(tmp_path, alloc([leader, mock("helper")]))  # the helper would run forever
    assert runner.client_status == "complete"
    assert "Leader Task Dead" in events(runner, "helper") and "Killed" in events(runner, "helper")


def test_a_restored_allocation_keeps_the_node_facts_its_tasks_started_with(tmp_path: Path) -> None:
    body = alloc([{**mock("t", run_for="10ms"), "Env": {"WHERE": "${node.unique.name}"}}])
    first = run(tmp_path, body)
    restored = AllocRunner.restore(first.dir, available(("mock",)), lambda _: None)
    assert restored is not None and restored.node == first.node and restored.node.name == "n1"
    assert restored.tasks["t"].spec.env["WHERE"] == "n1"
    assert "node-s3cret" not in (first.dir / "alloc.json").read_text()


def test_a_task_outlives_its_allocation_directory_being_removed(tmp_path: Path) -> None:
    """Someone removed the directory under a running task (not destroy(), which waits for the
    task threads): the task still finishes and reports, its record is simply not written."""
    body = alloc([mock("main", run_for="500ms")])
    runner = AllocRunner(body, tmp_path / body["ID"], available(("mock",)), lambda _: None, node={"Name": "n1"})
    runner.start()
    assert wait_for(lambda: runner.tasks["main"].state["State"] == "running", 30)
    shutil.rmtree(runner.dir)
    assert wait_for(lambda: runner.terminal, 30), runner.update()
    assert runner.client_status == "complete"
    assert not runner.dir.exists()
    assert not runner.tasks["main"].thread.is_alive()


def _last_start(runner: AllocRunner, task: str) -> int:
    """When the task last started (its events are capped: count restarts, not events)."""
    return max(int(e["Time"]) for e in runner.tasks[task].state["Events"] if e["Type"] == "Started")


def _restarted(runner: AllocRunner, task: str, times: int) -> bool:
    state = runner.tasks[task].state
    return bool(state["Restarts"] == times and state["Events"][-1]["Type"] in ("Started", "Finished"))


def test_restart_all_tasks_reruns_the_dead_hooks_in_lifecycle_order(tmp_path: Path) -> None:
    """Nomad's RestartAll: the completed prestart and poststart tasks run again, prestart before
    the main task starts again and poststart after it; the poststop task, not yet run, waits."""
    tasks = [
        mock("setup", "prestart", run_for="200ms"),
        mock("main"),
        mock("announce", "poststart", run_for="10ms"),
        mock("cleanup", "poststop", run_for="10ms"),
    ]
    body = alloc(tasks)
    body["Job"]["Type"] = "service"
    runner = AllocRunner(body, tmp_path / body["ID"], available(("mock",)), lambda _: None, node={"Name": "n1"})
    runner.start()
    try:
        assert wait_for(lambda: runner.tasks["announce"].dead and runner.tasks["setup"].dead, 30), runner.update()
        runner.restart("", all_tasks=False)  # the running tasks only: the hooks stay dead
        assert wait_for(lambda: _restarted(runner, "main", 1), 30), runner.update()
        assert runner.tasks["setup"].dead and runner.tasks["setup"].state["Restarts"] == 0
        runner.restart("", all_tasks=True)
        assert wait_for(lambda: all(_restarted(runner, name, 1) for name in ("setup", "announce")), 30)
        assert wait_for(lambda: _restarted(runner, "main", 2) and runner.tasks["announce"].dead, 30)
        setup = runner.tasks["setup"].state
        assert _last_start(runner, "setup") < _last_start(runner, "main") <= _last_start(runner, "announce")
        finished = max(int(e["Time"]) for e in setup["Events"] if e["Type"] == "Terminated")
        assert finished <= _last_start(runner, "main")
        assert "Restart Signaled" in events(runner, "setup") and not setup["Failed"]
        assert runner.client_status == "running" and "Started" not in events(runner, "cleanup")
        runner.stop(no_shutdown_delay=True)
        assert wait_for(lambda: runner.terminal, 30), runner.update()
        assert "Started" in events(runner, "cleanup")
    finally:
        runner.destroy()
    with pytest.raises(NotRunning):
        runner.restart("", all_tasks=True)
