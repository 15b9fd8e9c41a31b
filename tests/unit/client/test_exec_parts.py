"""The exec driver's pure parts and what the client hands it: cgroup limits and paths, the
chroot's binds, the user policy (Nomad's user.denylist / user.checked_drivers), the client
options that set them, the cores in the task's limits and environment, the OOM event."""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
from pathlib import Path
from typing import Any, BinaryIO

import pytest

from client.allocs.task_plans import CHROOTED_DRIVERS, group_network_mode, task_limits, task_plans
from client.config import ConfigError, build
from client.drivers import KILLED, Limits, StartError, TaskSpec, oom_killed, open_log
from client.drivers.exec import Exec, ExecHandle, ExecSettings, unusable_reason
from client.drivers.mock import MockHandle
from client.drivers.raw_exec import RawExec
from client.drivers.users import DEFAULT_CHECKED_DRIVERS, DEFAULT_DENYLIST, UserPolicy, identity, parse_list
from client.isolation.cgroups import MIB, TaskCgroups, limit_files, missing_controllers
from client.isolation.chroot import DEFAULT_CHROOT_ENV, binds
from client.tasks.restarts import RestartPolicy, RestartTracker
from client.tasks.task_runner import TaskRunner
from client.tasks.taskenv import NodeInfo, cpuset_text
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit


# -- cgroups --------------------------------------------------------------------------------


def test_memory_is_the_hard_limit_unless_memory_max_is_set_then_it_is_the_soft_one() -> None:
    plain = limit_files(Limits(cpu_mhz=500, memory_mb=64))
    assert plain.memory == (("memory.limit_in_bytes", str(64 * MIB)),)
    assert plain.cpu == (("cpu.shares", "500"),)
    assert plain.cpuset_cpus == ""
    burst = limit_files(Limits(cpu_mhz=1, memory_mb=64, memory_max_mb=256, cores=(3, 1)))
    assert burst.memory == (("memory.limit_in_bytes", str(256 * MIB)), ("memory.soft_limit_in_bytes", str(64 * MIB)))
    assert burst.cpu == (("cpu.shares", "2"),)  # the kernel's floor
    assert burst.cpuset_cpus == "1,3"
    assert limit_files(Limits()) == limit_files(Limits()) and limit_files(Limits()).memory == ()


def test_task_groups_are_named_parent_alloc_task_in_every_hierarchy(tmp_path: Path) -> None:
    for controller in ("memory", "cpu", "freezer", "unified"):
        (tmp_path / controller).mkdir()
        (tmp_path / controller / "cgroup.procs").touch()
    groups = TaskCgroups.of("/corral/", "a1", "web", root=tmp_path)
    assert groups.name == "corral/a1.web"
    assert groups.v1("memory") == tmp_path / "memory" / "corral" / "a1.web"
    assert groups.directories() == [tmp_path / c / "corral" / "a1.web" for c in ("memory", "cpu", "freezer", "unified")]
    assert missing_controllers(tmp_path) == []
    (tmp_path / "freezer" / "cgroup.procs").unlink()
    assert missing_controllers(tmp_path) == ["freezer"]


def test_oom_is_read_from_oom_control(tmp_path: Path) -> None:
    groups = TaskCgroups("corral/a1.t", tmp_path)
    control = groups.v1("memory") / "memory.oom_control"
    control.parent.mkdir(parents=True)
    control.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 0\n")
    assert not groups.oom_killed()
    control.write_text("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n")
    assert groups.oom_killed()


# -- the chroot -----------------------------------------------------------------------------


def test_binds_are_the_existing_chroot_paths_read_only_then_alloc_and_mounts() -> None:
    from client.drivers import Mount

    present = {"/usr", "/etc", "/lib"}
    found = binds(DEFAULT_CHROOT_ENV, Path("/a/alloc"), (Mount("/data", "/srv/data", True),), present.__contains__)
    assert found == [
        ("/etc", "/etc", True),
        ("/lib", "/lib", True),
        ("/usr", "/usr", True),
        ("/a/alloc", "/alloc", False),
        ("/data", "/srv/data", True),
    ]
    assert set(DEFAULT_CHROOT_ENV) >= {"/bin", "/etc", "/lib", "/lib32", "/lib64", "/run/resolvconf", "/sbin", "/usr"}


# -- users ----------------------------------------------------------------------------------


def test_nomads_defaults_refuse_root_for_exec_but_not_for_raw_exec() -> None:
    policy = UserPolicy()
    assert DEFAULT_DENYLIST == ("root", "Administrator") and DEFAULT_CHECKED_DRIVERS == ("exec", "qemu", "java")
    with pytest.raises(StartError, match='running as user "root" is disallowed'):
        policy.check("exec", "root")
    policy.check("raw_exec", "root")
    policy.check("exec", "nobody")
    strict = UserPolicy(frozenset({"root", "admin"}), frozenset({"raw_exec"}))
    with pytest.raises(StartError):
        strict.check("raw_exec", "admin")


def test_identity_of_a_name_a_uid_and_an_unknown_user() -> None:
    nobody = identity("nobody")
    assert (nobody.uid, nobody.name) == (65534, "nobody")
    assert identity("65534").name == "nobody"
    assert identity("4242").uid == 4242
    with pytest.raises(StartError, match="does not exist"):
        identity("no-such-user-here")


def test_option_lists_are_comma_separated_names() -> None:
    assert parse_list(" root, admin ,,", "user.denylist") == frozenset({"root", "admin"})
    with pytest.raises(ValueError, match=r"user\.denylist"):
        parse_list(3, "user.denylist")


# -- the client's configuration -------------------------------------------------------------


def test_client_options_chroot_env_and_cgroup_parent_come_from_the_file() -> None:
    config = build(
        {
            "options": {"user.denylist": "root,ops", "user.checked_drivers": "exec,raw_exec"},
            "chroot_env": {"/usr": "/usr", "/opt/tools": "/tools"},
            "cgroup_parent": "/jobs/",
        },
        {},
        {},
    )
    assert config.user_denylist == ("ops", "root")
    assert config.user_checked_drivers == ("exec", "raw_exec")
    assert config.chroot_env == {"/usr": "/usr", "/opt/tools": "/tools"}
    assert config.cgroup_parent == "jobs"
    defaults = build({}, {}, {})
    assert defaults.user_denylist == DEFAULT_DENYLIST and defaults.chroot_env == {}


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"options": {"user.allowlist": "x"}}, "unknown option 'user.allowlist'"),
        ({"options": {"user.denylist": 1}}, "user.denylist"),
        ({"options": []}, "options: must be an object"),
        ({"chroot_env": {"usr": "/usr"}}, "absolute"),
        ({"chroot_env": {"/usr": "/../usr"}}, "absolute"),
        ({"chroot_env": ["/usr"]}, "chroot_env"),
        ({"cgroup_parent": "../up"}, "cgroup_parent"),
        ({"cgroup_parent": ""}, "cgroup_parent"),
    ],
)
def test_bad_exec_settings_name_the_setting(values: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build(values, {}, {})


# -- what the allocation hands the driver ---------------------------------------------------


def cores_alloc(driver: str = "exec") -> dict[str, Any]:
    task = {"Name": "t", "Driver": driver, "Config": {"command": "true"}, "Resources": {"Cores": 2, "MemoryMB": 64}}
    return {
        "ID": "a1b2c3d4-0000-0000-0000-000000000000",
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "AllocatedResources": {"Tasks": {"t": {"Cpu": {"CpuShares": 4000, "ReservedCores": [2, 3]}}}},
        "Job": {
            "ID": "j",
            "Type": "batch",
            "TaskGroups": [{"Name": "g", "Networks": [{"Mode": "bridge"}], "Tasks": [task]}],
        },
    }


def test_reserved_cores_reach_the_limits_and_the_environment(tmp_path: Path) -> None:
    (plan,), _ = task_plans(cores_alloc(), NodeInfo.of({"Name": "n1"}), tmp_path)
    assert plan.spec.limits == Limits(cpu_mhz=4000, memory_mb=64, cores=(2, 3))
    assert plan.spec.env["NOMAD_CPU_CORES"] == "2-3" and plan.spec.env["NOMAD_CPU_LIMIT"] == "4000"
    assert plan.spec.network_mode == "bridge"
    # exec sees its directories where its chroot puts them.
    assert "exec" in CHROOTED_DRIVERS
    assert (plan.spec.env["NOMAD_ALLOC_DIR"], plan.spec.env["NOMAD_TASK_DIR"]) == ("/alloc", "/local")
    assert plan.spec.env["NOMAD_SECRETS_DIR"] == "/secrets" and plan.spec.env["TMPDIR"] == "/tmp"
    (raw,), _ = task_plans(cores_alloc("raw_exec"), NodeInfo.of({"Name": "n1"}), tmp_path)
    assert raw.spec.env["NOMAD_TASK_DIR"] == str(tmp_path / "t" / "local")


def test_limits_without_cores_are_the_tasks_resources() -> None:
    task = {"Resources": {"CPU": 300, "MemoryMB": 64, "MemoryMaxMB": 128}}
    assert task_limits(task) == Limits(cpu_mhz=300, memory_mb=64, memory_max_mb=128)
    assert group_network_mode({}) == "host" and group_network_mode({"Networks": [{"Mode": ""}]}) == "host"


def test_cpuset_text_is_linux_list_format() -> None:
    assert cpuset_text([0, 1]) == "0-1"
    assert cpuset_text([5, 0, 2, 3, 4]) == "0,2-5"
    assert cpuset_text([7]) == "7"


def test_exec_refuses_a_network_it_cannot_join_with_a_clear_start_error(tmp_path: Path) -> None:
    spec = TaskSpec("t", "exec", {"command": "/bin/true"}, {}, 1.0, network_mode="cni/mynet")
    with pytest.raises(StartError, match="network mode 'cni/mynet' is not supported by the exec driver"):
        Exec(ExecSettings()).start(spec, tmp_path, tmp_path)
    isolated = TaskSpec("t", "exec", {"command": "/bin/true"}, {}, 1.0, network_mode="none")  # no namespace made
    with pytest.raises(StartError, match="none network mode: the allocation has no network namespace"):
        Exec(ExecSettings()).start(isolated, tmp_path, tmp_path)
    bridged = TaskSpec("t", "exec", {"command": "/bin/true"}, {}, 1.0, network_mode="bridge")  # no namespace made
    with pytest.raises(StartError, match="bridge network mode: the allocation has no network namespace"):
        Exec(ExecSettings()).start(bridged, tmp_path, tmp_path)
    with pytest.raises(StartError, match=r"config\.command is required"):
        Exec().start(TaskSpec("t", "exec", {}, {}, 1.0), tmp_path, tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="running as another user needs root")
def test_raw_exec_runs_as_the_tasks_user_and_refuses_a_denied_one(tmp_path: Path) -> None:
    task_dir, logs = tmp_path / "t", tmp_path / "logs"
    task_dir.mkdir(mode=0o755)
    logs.mkdir()
    spec = TaskSpec("t", "raw_exec", {"command": "/bin/sh", "args": ["-c", "id -un; touch local/ok"]}, {}, 1.0)
    handle = RawExec().start(TaskSpec(**{**spec.__dict__, "user": "nobody"}), task_dir, logs)
    assert handle.wait(30) == 0
    assert (logs / "t.stdout.0").read_text() == "nobody\n"
    assert (task_dir / "local" / "ok").stat().st_uid == 65534
    denied = RawExec(UserPolicy(frozenset({"nobody"}), frozenset({"raw_exec"})))
    with pytest.raises(StartError, match='running as user "nobody" is disallowed'):
        denied.start(TaskSpec(**{**spec.__dict__, "user": "nobody"}), task_dir, logs)


# -- the OOM kill as the task runner reports it ---------------------------------------------


class OomHandle(MockHandle):
    def oom_killed(self) -> bool:
        return True


class OomDriver:
    name = "mock"

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> OomHandle:
        return OomHandle(0.0, 0.0, 137, 0.0)

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> None:
        return None


def test_an_oom_kill_is_a_terminated_event_saying_oom_killed(tmp_path: Path) -> None:
    assert not oom_killed(MockHandle(0.0, 0.0, KILLED, 0.0))  # drivers that cannot tell never say so
    tracker = RestartTracker(RestartPolicy.of({"Attempts": 0, "Mode": "fail"}), True)
    done = threading.Event()
    spec = TaskSpec("t", "mock", {}, {}, 1.0)
    runner = TaskRunner(spec, OomDriver(), tracker, tmp_path, tmp_path, done.set)
    runner.start()
    assert wait_for(lambda: runner.dead, 10)
    (terminated,) = [e for e in runner.state["Events"] if e["Type"] == "Terminated"]
    assert terminated["ExitCode"] == 137
    assert terminated["DisplayMessage"] == 'Exit Code: 137, Exit Message: "OOM Killed"'
    assert terminated["Details"]["oom_killed"] == "true"
    assert runner.state["Failed"]


@pytest.mark.skipif(unusable_reason() is not None, reason=f"exec cannot run here: {unusable_reason()}")
def test_alloc_exec_enters_the_tasks_namespaces_chroot_and_user(tmp_path: Path) -> None:
    alloc_dir = tmp_path / "a1"
    (alloc_dir / "alloc" / "logs").mkdir(parents=True)
    (alloc_dir / "t").mkdir()
    parent = f"corral-unit-{os.getpid()}"
    spec = TaskSpec("t", "exec", {"command": "/bin/sleep", "args": ["300"]}, {"PATH": "/usr/bin:/bin"}, 1.0)
    spec = TaskSpec(**{**spec.__dict__, "alloc_id": "a1", "alloc_dir": alloc_dir})
    handle = Exec(ExecSettings(cgroup_parent=parent)).start(spec, alloc_dir / "t", alloc_dir / "alloc" / "logs")
    assert isinstance(handle, ExecHandle)
    try:
        command = handle.enter(["/bin/sh", "-c", "id -un; echo $$; cat /proc/1/comm; pwd"], "")
        shown = subprocess.run(command, env=spec.env, capture_output=True, text=True, check=True, cwd="/")
        name, pid, first, cwd = shown.stdout.split("\n")[:4]
        assert (name, cwd) == ("nobody", "/")
        assert first == "sleep" and int(pid) > 1  # the task is PID 1 beside it
        assert handle.kill(1.0) == 137  # sleep traps nothing: SIGKILL after kill_timeout
        with pytest.raises(StartError, match="not running"):
            handle.enter(["true"], "")
    finally:
        handle.kill(1.0)
        for hierarchy in [*Path("/sys/fs/cgroup").iterdir()]:
            with contextlib.suppress(OSError):
                (hierarchy / parent).rmdir()


# -- log FIFOs ------------------------------------------------------------------------------


def test_a_log_fifo_opens_without_its_reader_and_keeps_what_the_task_wrote_for_logmon(tmp_path: Path) -> None:
    """drivers.open_log: the task may start before logmon holds the FIFO (a write-only open
    would wait for it); what it writes meanwhile is there when logmon reads."""
    fifo = tmp_path / ".t.stdout.fifo"
    os.mkfifo(fifo, 0o600)
    opened: list[BinaryIO] = []

    def open_and_write() -> None:
        out = open_log(fifo)
        out.write(b"before logmon\n")
        opened.append(out)  # the task holds it while it runs

    writer = threading.Thread(target=open_and_write, daemon=True)
    writer.start()
    writer.join(30)
    assert len(opened) == 1, "the open waited for a reader"
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        assert os.read(reader, 100) == b"before logmon\n"
    finally:
        os.close(reader)
        opened[0].close()


def test_a_plain_log_file_is_appended_to(tmp_path: Path) -> None:
    path = tmp_path / "t.stdout.0"
    path.write_bytes(b"old\n")
    with open_log(path) as out:
        out.write(b"new\n")
    assert path.read_bytes() == b"old\nnew\n"
