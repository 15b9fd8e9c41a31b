"""An allocation runner's Nomad services with the in-process `mock` driver: what it registers
while it runs and not once it is told to stop, check_restart restarting the task through the
restart path when its check keeps failing, and an in-place update's new deployment rebuilding
the checks from the new job version."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from client.allocs.alloc_runner import AllocRunner
from client.drivers import available
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit
NANOS = 1_000_000_000
ALLOC = "a1b2c3d4-0000-0000-0000-000000000000"


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def alloc(port: int, path: str = "/") -> dict[str, Any]:
    check = {
        "Name": "alive",
        "Type": "tcp",
        "Interval": NANOS,
        "Timeout": NANOS,
        "Path": path,
        "CheckRestart": {"Limit": 2, "Grace": 0},
    }
    service = {"Name": "web", "Provider": "nomad", "PortLabel": "http", "Checks": [check]}
    task = {"Name": "t", "Driver": "mock", "Config": {}, "RestartPolicy": {"Attempts": 0, "Mode": "fail"}}
    return {
        "ID": ALLOC,
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "DeploymentID": "d1",
        "AllocatedResources": {"Shared": {"Ports": [{"Label": "http", "Value": port}]}},
        "Job": {"ID": "j", "Type": "service", "TaskGroups": [{"Name": "g", "Tasks": [task], "Services": [service]}]},
    }


def restarts(runner: AllocRunner) -> int:
    return int(runner.tasks["t"].state.get("Restarts") or 0)


def test_services_register_while_running_and_check_restart_restarts_the_task(tmp_path: Path) -> None:
    node = {"Name": "n1", "Attributes": {"unique.network.ip-address": "127.0.0.1"}}
    port = closed_port()
    runner = AllocRunner(alloc(port), tmp_path / ALLOC, available(("mock",)), lambda _: None, node=node)
    runner.start()
    try:
        assert wait_for(lambda: runner.client_status == "running", 30)
        (reg,) = runner.service_registrations()
        assert reg == {
            "ID": f"_nomad-task-{ALLOC}-group-g-web-http",
            "ServiceName": "web",
            "Tags": [],
            "Address": "127.0.0.1",
            "Port": port,
        }
        # Nothing listens on the port: the check fails, twice in a row restarts the task.
        assert wait_for(lambda: restarts(runner) >= 1, 30), runner.check_results()
        (result,) = runner.check_results().values()
        assert (result["Status"], result["Check"], result["Service"]) == ("failure", "alive", "web")
        signalled = [e for e in runner.tasks["t"].state["Events"] if e["Type"] == "Restart Signaled"]
        assert signalled and "healthcheck" in signalled[0]["DisplayMessage"]
        # Its deployment health: checks failing, the healthy deadline long gone: unhealthy.
        assert runner.judge_health(1e12) and runner.health is not None and runner.health.healthy is False

        before = set(runner.check_results())
        runner.join_deployment({**alloc(port, "/other"), "DeploymentID": "d2"})  # an in-place update
        assert runner.checks is not None and set(runner.checks.states) != before
    finally:
        runner.stop()
    assert runner.service_registrations() == []  # deregistered as soon as it is told to stop
    assert wait_for(lambda: runner.terminal, 30)
