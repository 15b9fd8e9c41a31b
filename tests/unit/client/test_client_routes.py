"""The client's side of Nomad's client routes, without processes: the allocation directory's
rules (escapes by `..` or symlink, the secrets directory, the client's own record), Go's
FileMode text, restart in place and signal of a mock task, and the endpoint's refusals."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from client.allocs.alloc_runner import AllocRunner
from client.drivers import available
from client.endpoint import alloc_fs, http_api
from client.endpoint.alloc_fs import FsError
from client.tasks.task_runner import NotRunning
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit
ALLOC_ID = "a1b2c3d4-0000-0000-0000-000000000000"


@pytest.fixture
def alloc_dir(tmp_path: Path) -> Path:
    root = tmp_path / "allocs" / ALLOC_ID
    for directory in ("alloc/logs", "web/local", "web/secrets"):
        (root / directory).mkdir(parents=True)
    (root / "web" / "local" / "notes.txt").write_text("hello world\n")
    (root / "web" / "secrets" / "token").write_text("s3cret")
    (root / "alloc.json").write_text("{}")
    (tmp_path / "outside.txt").write_text("not yours")
    (root / "web" / "local" / "out").symlink_to(tmp_path)
    (root / "web" / "local" / "notes-link").symlink_to(root / "web" / "local" / "notes.txt")
    return root


def refusal(call: Any) -> tuple[int, str]:
    with pytest.raises(FsError) as caught:
        call()
    return caught.value.status, caught.value.field


def test_paths_stay_inside_the_allocation_directory(alloc_dir: Path) -> None:
    assert refusal(lambda: alloc_fs.list_dir(alloc_dir, "../..")) == (400, "path")
    assert refusal(lambda: alloc_fs.stat(alloc_dir, "web/local/out/outside.txt")) == (400, "path")
    assert refusal(lambda: alloc_fs.read_at(alloc_dir, ["web"], "web/local/out/outside.txt", 0, 0)) == (400, "path")
    assert refusal(lambda: alloc_fs.stat(alloc_dir, "web\x00")) == (400, "path")
    # A symlink that stays inside, and `..` that stays inside, are fine.
    assert alloc_fs.read_at(alloc_dir, ["web"], "web/local/notes-link", 0, 0) == b"hello world\n"
    assert alloc_fs.read_at(alloc_dir, ["web"], "web/../web/local/notes.txt", 6, 5) == b"world"
    assert alloc_fs.stat(alloc_dir, "web/local/notes-link")["Name"] == "notes-link"
    os.mkfifo(alloc_dir / "web" / "local" / "pipe")  # reading it would block the endpoint for good
    assert refusal(lambda: alloc_fs.read_at(alloc_dir, ["web"], "web/local/pipe", 0, 0)) == (400, "path")
    assert alloc_fs.stat(alloc_dir, "web/local/pipe")["FileMode"].startswith("p")


def test_secrets_are_listed_but_never_read_and_the_record_is_hidden(alloc_dir: Path) -> None:
    assert [f["Name"] for f in alloc_fs.list_dir(alloc_dir, "web/secrets")] == ["token"]
    assert refusal(lambda: alloc_fs.read_at(alloc_dir, ["web"], "web/secrets/token", 0, 0)) == (403, "path")
    assert refusal(lambda: alloc_fs.read_at(alloc_dir, ["web"], "/web/local/../secrets/token", 0, 0)) == (403, "path")
    assert "alloc.json" not in [f["Name"] for f in alloc_fs.list_dir(alloc_dir, "/")]
    assert refusal(lambda: alloc_fs.read_at(alloc_dir, ["web"], "alloc.json", 0, 0)) == (404, "path")


def test_file_info_is_nomads_alloc_file_info(alloc_dir: Path) -> None:
    (alloc_dir / "web" / "local" / "notes.txt").chmod(0o640)
    info = alloc_fs.stat(alloc_dir, "web/local/notes.txt")
    assert info["FileMode"] == "-rw-r-----" and info["Size"] == 12 and not info["IsDir"]
    assert info["ContentType"].startswith("text/plain") and info["ModTime"].endswith("Z")
    listed = {f["Name"]: f for f in alloc_fs.list_dir(alloc_dir, "web/local")}
    assert listed["out"]["FileMode"].startswith("L") and "ContentType" not in listed["out"]
    assert alloc_fs.stat(alloc_dir, "/")["IsDir"] and alloc_fs.stat(alloc_dir, "/")["FileMode"].startswith("d")


def _runner(tmp_path: Path) -> AllocRunner:
    task = {"Name": "web", "Driver": "mock", "Config": {}, "KillTimeout": 0}
    body = {
        "ID": ALLOC_ID,
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "Job": {"ID": "j", "Type": "service", "TaskGroups": [{"Name": "g", "Tasks": [task]}]},
    }
    runner = AllocRunner(body, tmp_path / ALLOC_ID, available(("mock",)), lambda _: None, node={"Name": "n1"})
    runner.start()
    assert wait_for(lambda: runner.tasks["web"].state["State"] == "running", 30)
    return runner


def test_restart_in_place_counts_a_restart_outside_the_policy(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    try:
        runner.restart("web", all_tasks=False)
        task = runner.tasks["web"]
        # The state turns running just before its Started event is recorded: wait for both.
        assert wait_for(
            lambda: (
                task.state["Restarts"] == 1
                and task.state["State"] == "running"
                and task.state["Events"][-1]["Type"] == "Started"
            ),
            30,
        ), task.state
        kinds = [e["Type"] for e in task.state["Events"]]
        assert kinds.index("Restart Signaled") < kinds.index("Restarting") < len(kinds) - 1
        assert kinds[-1] == "Started" and task.tracker.count == 0  # the policy's budget is untouched
        runner.signal("web", "SIGUSR1", 10)
        assert task.state["Events"][-1]["Type"] == "Signaling"
        assert task.state["Events"][-1]["TaskSignal"] == "SIGUSR1"
    finally:
        runner.destroy()
    with pytest.raises(NotRunning):
        runner.tasks["web"].restart("again")


def test_endpoint_refuses_unknown_tasks_and_signals_naming_them(tmp_path: Path) -> None:
    runner = _runner(tmp_path)
    local = http_api.Local(lambda _: runner.dir, lambda _: runner, tmp_path)
    try:
        assert refusal(lambda: http_api.signal(local, ALLOC_ID, {"task": "web", "signal": "SIGNOPE"})) == (
            400,
            "Signal",
        )
        assert refusal(lambda: http_api.signal(local, ALLOC_ID, {"task": "db", "signal": "SIGHUP"})) == (404, "Task")
        assert refusal(lambda: http_api.restart(local, ALLOC_ID, {"task": "db"})) == (404, "TaskName")
        both = {"task": "web", "all_tasks": "true"}
        assert refusal(lambda: http_api.restart(local, ALLOC_ID, both)) == (400, "TaskName")
        status, body, _ = http_api.alloc_stats(local, ALLOC_ID, {})
        assert status == 200 and b'"Tasks": {"web"' in body  # a mock task has no process: zeros
        assert http_api.route("PUT", f"/v1/client/allocation/{ALLOC_ID}/signal") is not None
        assert http_api.route("GET", f"/v1/client/allocation/{ALLOC_ID}/signal") is None
    finally:
        runner.destroy()


def test_gc_of_one_allocation_asks_the_agent_and_refuses_what_it_cannot_collect(tmp_path: Path) -> None:
    asked: list[str] = []

    def collect(alloc_id: str) -> bool:
        asked.append(alloc_id)
        return alloc_id == ALLOC_ID  # only this one is terminal here

    local = http_api.Local(lambda _: None, lambda _: None, tmp_path, collect=collect)
    assert http_api.alloc_gc(local, ALLOC_ID, {})[0] == 200
    live = "ffffffff-0000-0000-0000-000000000000"
    assert refusal(lambda: http_api.alloc_gc(local, live, {})) == (404, "AllocID")
    assert asked == [ALLOC_ID, live]
    assert refusal(
        lambda: http_api.alloc_gc(http_api.Local(lambda _: None, lambda _: None, tmp_path), ALLOC_ID, {})
    ) == (
        404,
        "AllocID",
    )
    assert http_api.route("GET", f"/v1/client/allocation/{ALLOC_ID}/gc") is not None


def test_gc_of_the_node_asks_the_agent_and_says_how_many_it_collected(tmp_path: Path) -> None:
    local = http_api.Local(lambda _: None, lambda _: None, tmp_path, collect_all=lambda: 3)
    status, body, _ = http_api.node_gc(local, "", {})
    assert status == 200 and json.loads(body) == {"Collected": 3}
    assert refusal(lambda: http_api.node_gc(http_api.Local(lambda _: None, lambda _: None, tmp_path), "", {}))[0] == 404
    found = http_api.route("PUT", "/v1/client/gc")
    assert found is not None and found[0] is http_api.node_gc
    assert http_api.route("GET", "/v1/client/gc") is None
