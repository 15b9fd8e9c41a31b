"""Log rotation with real processes: raw_exec tasks writing through their logmon. 50 MB written
with `logs { max_files = 2, max_file_size = 1 }` leaves at most two files of at most 1 MB, the
newest holding the tail; `disabled` writes nothing; a client restart (the runner abandoned and
restored, as a restarted client does) keeps the same logmon and the log flowing; the task's end
stops its logmon. Also host volumes exposed to raw_exec."""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import Any

import psutil
import pytest

from client.allocs.alloc_runner import AllocRunner
from client.drivers import LogConfig, StartError, available
from client.logs import logmon_control
from tests.support.processes import wait_for

pytestmark = pytest.mark.acceptance

NO_RESTART = {"Attempts": 0, "Interval": 60_000_000_000, "Delay": 0, "Mode": "fail"}
MB = 1024 * 1024


def _alloc(alloc_id: str, script: str, logs: dict[str, Any] | None, **group: Any) -> dict[str, Any]:
    task: dict[str, Any] = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", script]},
        "RestartPolicy": NO_RESTART,
        "KillTimeout": 2_000_000_000,
        **({"LogConfig": logs} if logs is not None else {}),
        **group.pop("task", {}),
    }
    return {
        "ID": alloc_id,
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "Job": {"ID": "j", "Type": "batch", "TaskGroups": [{"Name": "g", "Tasks": [task], **group}]},
    }


def _runner(tmp_path: Path, body: dict[str, Any], node: dict[str, Any] | None = None) -> AllocRunner:
    runner = AllocRunner(body, tmp_path / body["ID"], available(("raw_exec",)), lambda _: None, node=node or {})
    runner.start()
    return runner


def _read(path: Path) -> bytes:
    return path.read_bytes() if path.exists() else b""


def _log_files(runner: AllocRunner, kind: str = "stdout") -> dict[str, int]:
    logs = runner.dir / "alloc" / "logs"
    return {p.name: p.stat().st_size for p in sorted(logs.glob(f"t.{kind}.*"))}


def test_fifty_megabytes_leave_two_files_of_one_megabyte(tmp_path: Path) -> None:
    # 50 MB of numbered 1000-byte lines, then a last line to find in the tail.
    script = "head -c 52428800 /dev/zero | tr '\\0' 'x'; echo; echo the-end"
    body = _alloc("a1b2c3d4-0000-0000-0000-0000000000b1", script, {"MaxFiles": 2, "MaxFileSizeMB": 1})
    runner = _runner(tmp_path, body)
    try:
        assert wait_for(lambda: runner.terminal, 120), runner.update()
        assert runner.client_status == "complete", runner.update()
        files = _log_files(runner)
        assert 1 <= len(files) <= 2 and all(size <= MB for size in files.values()), files
        newest = max(files, key=lambda name: int(name.rsplit(".", 1)[1]))
        assert int(newest.rsplit(".", 1)[1]) >= 50  # it did rotate, about once per megabyte
        assert (runner.dir / "alloc/logs" / newest).read_bytes().endswith(b"\nthe-end\n")
        assert logmon_control.running(runner.dir / "alloc/logs", "t") is None  # stopped with the task
    finally:
        runner.destroy()


def test_disabled_logs_write_nothing(tmp_path: Path) -> None:
    body = _alloc("a1b2c3d4-0000-0000-0000-0000000000b2", "echo hidden; echo also >&2", {"Disabled": True})
    runner = _runner(tmp_path, body)
    try:
        assert wait_for(lambda: runner.terminal, 60) and runner.client_status == "complete", runner.update()
        assert list((runner.dir / "alloc" / "logs").iterdir()) == []
    finally:
        runner.destroy()


def test_a_client_restart_keeps_logmon_and_the_log_flowing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    script = "i=0; while [ $i -lt 600 ]; do echo line-$i; i=$((i+1)); sleep 0.05; done"
    body = _alloc("a1b2c3d4-0000-0000-0000-0000000000b3", script, None)
    first = _runner(tmp_path, body)
    logs = first.dir / "alloc" / "logs"
    try:
        assert wait_for(lambda: b"line-5\n" in _read(logs / "t.stdout.0"), 30)
        before = logmon_control.running(logs, "t")
        assert before is not None
        # The client goes away without stopping anything: the runner is dropped as it stands.
        # Its process would be gone with it; here its task thread lives on, so it must record
        # nothing more (it would write into the directory the restored runner removes).
        first.persist()
        monkeypatch.setattr(first, "persist", lambda: None)
        restored = AllocRunner.restore(first.dir, available(("raw_exec",)), lambda _: None)
        assert restored is not None
        restored.start()
        after = logmon_control.running(logs, "t")
        assert after is not None and after.pid == before.pid  # found again, not started anew
        size = (logs / "t.stdout.0").stat().st_size
        assert wait_for(lambda: (logs / "t.stdout.0").stat().st_size > size + 50, 30)  # still writing
        task_pid = restored.tasks["t"].pids()[0]
        restored.destroy()
        assert not psutil.pid_exists(task_pid) or psutil.Process(task_pid).status() == psutil.STATUS_ZOMBIE
        assert wait_for(lambda: not psutil.pid_exists(before.pid), 10)
    finally:
        first.stopping = True
        for task in first.tasks.values():
            task.stop()


def test_a_task_that_writes_and_exits_before_logmon_is_up_keeps_its_output(tmp_path: Path) -> None:
    """The task starts while logmon comes up (drivers.open_log) and may be gone before logmon
    opens the FIFO: the client holds the FIFO meanwhile, so the pipe keeps what it wrote."""
    runner = _runner(tmp_path, _alloc("a1b2c3d4-0000-0000-0000-0000000000b7", "echo quick; echo oops >&2", {}))
    try:
        assert wait_for(lambda: runner.terminal, 60) and runner.client_status == "complete", runner.update()
        logs = runner.dir / "alloc" / "logs"
        assert wait_for(lambda: _read(logs / "t.stdout.0") == b"quick\n" and _read(logs / "t.stderr.0") == b"oops\n")
    finally:
        runner.destroy()


def test_raw_exec_sees_a_host_volume_at_its_destination(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "greeting.txt").write_text("from the host volume\n")
    group = {
        "Volumes": {"data": {"Name": "data", "Type": "host", "Source": "shared", "ReadOnly": True}},
        "task": {"VolumeMounts": [{"Volume": "data", "Destination": "/srv/data", "ReadOnly": True}]},
    }
    body = _alloc("a1b2c3d4-0000-0000-0000-0000000000b4", "cat srv/data/greeting.txt", None, **group)
    node = {"Name": "n", "HostVolumes": {"shared": {"Name": "shared", "Path": str(shared), "ReadOnly": True}}}
    runner = _runner(tmp_path, body, node)
    try:
        assert wait_for(lambda: runner.terminal, 60) and runner.client_status == "complete", runner.update()
        assert (runner.dir / "alloc/logs/t.stdout.0").read_text() == "from the host volume\n"
        assert os.readlink(runner.dir / "t" / "srv" / "data") == str(shared)
    finally:
        runner.destroy()


def test_a_node_without_the_volume_fails_the_allocation(tmp_path: Path) -> None:
    group = {
        "Volumes": {"data": {"Name": "data", "Type": "host", "Source": "shared"}},
        "task": {"VolumeMounts": [{"Volume": "data", "Destination": "data"}]},
    }
    body = _alloc("a1b2c3d4-0000-0000-0000-0000000000b5", "true", None, **group)
    runner = _runner(tmp_path, body)
    try:
        assert runner.client_status == "failed" and "missing requested host volume 'shared'" in runner.description
    finally:
        runner.destroy()


def test_a_launched_logmon_makes_its_fifos_first_and_a_writer_waits_for_it(tmp_path: Path) -> None:
    """A task may start while logmon comes up (drivers.open_log): the FIFOs exist at once (no
    plain file is ever opened in their place), and a write-only open (docker's log pump) waits
    until logmon holds them; what it writes reaches the rotated file."""
    launch = logmon_control.launch(tmp_path, "t", LogConfig())
    try:
        fifo = tmp_path / ".t.stdout.fifo"
        assert stat.S_ISFIFO(fifo.lstat().st_mode) and stat.S_ISFIFO((tmp_path / ".t.stderr.fifo").lstat().st_mode)
        with fifo.open("ab", buffering=0) as out:  # blocks until logmon reads
            out.write(b"hello\n")
        launch.wait()
        assert wait_for(lambda: _read(tmp_path / "t.stdout.0") == b"hello\n")
    finally:
        logmon_control.stop(tmp_path, "t")
        launch.abandon()


@pytest.mark.parametrize("command", ["/bin/false", "/nonexistent/logmon"], ids=["exits", "never-spawns"])
def test_a_logmon_that_never_comes_up_fails_the_wait_and_releases_a_waiting_writer(
    tmp_path: Path, command: str
) -> None:
    """It exits at once, or its process cannot even be spawned (the spawn runs in a thread of
    its own, beside the driver's start): the wait fails either way, and no writer stays blocked."""
    for stream in ("stdout", "stderr"):
        os.mkfifo(tmp_path / f".t.{stream}.fifo", 0o600)
    launch = logmon_control.Launch(tmp_path, "t", [command])
    opened = threading.Event()

    def writer() -> None:
        with contextlib.suppress(OSError), (tmp_path / ".t.stdout.fifo").open("ab", buffering=0):
            opened.set()

    thread = threading.Thread(target=writer, daemon=True)
    thread.start()
    with pytest.raises(StartError, match="logmon for task 't' failed to start"):
        launch.wait()
    thread.join(30)
    assert opened.is_set() and not thread.is_alive(), "a writer stayed blocked on the FIFO of a dead logmon"
