"""`corral alloc restart|signal` (app/cli/allocs/alloc_ops.py) against a stand-in server: the route and
body each sends, Nomad's task check before it, and the wording of each failure."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner

from app.cli.allocs import alloc_ops
from app.cli.allocs.alloc import alloc
from app.cli.support import http

pytestmark = pytest.mark.unit
FULL = "5f0c7a8e-0000-4000-8000-000000000001"
ALLOCATION = {"ID": FULL, "TaskGroup": "g", "Job": {"TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t"}]}]}}


class Server:
    def __init__(self, failure: str | None = None) -> None:
        self.puts: list[tuple[str, Any]] = []
        self.failure = failure

    def get(self, path: str, params: dict[str, str] | None = None) -> Any:
        assert path == f"/v1/allocation/{FULL}"
        return ALLOCATION

    def put(self, path: str, body: Any) -> Any:
        self.puts.append((path, body))
        if self.failure is not None:
            raise http.ApiError(self.failure, 500)
        return {}


def run(monkeypatch: pytest.MonkeyPatch, server: Server, *args: str) -> tuple[int, str]:
    monkeypatch.setattr(alloc_ops, "resolve", lambda prefix: FULL if FULL.startswith(prefix) else prefix)
    monkeypatch.setattr(http, "get", server.get)
    monkeypatch.setattr(http, "put", server.put)
    result = CliRunner().invoke(alloc, list(args))
    return result.exit_code, result.output


def test_restart_and_signal_send_their_bodies_to_their_routes(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server()
    assert run(monkeypatch, server, "restart", FULL[:8], "t")[0] == 0
    assert run(monkeypatch, server, "restart", "-all-tasks", FULL)[0] == 0
    assert run(monkeypatch, server, "signal", "-s", "SIGUSR1", "-task", "t", FULL)[0] == 0
    assert run(monkeypatch, server, "signal", FULL)[0] == 0
    assert server.puts == [
        (f"/v1/client/allocation/{FULL}/restart", {"TaskName": "t", "AllTasks": False}),
        (f"/v1/client/allocation/{FULL}/restart", {"TaskName": "", "AllTasks": True}),
        (f"/v1/client/allocation/{FULL}/signal", {"Task": "t", "Signal": "SIGUSR1"}),
        (f"/v1/client/allocation/{FULL}/signal", {"Task": "", "Signal": "SIGKILL"}),
    ]


def test_an_unknown_task_is_refused_before_anything_is_sent(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server()
    for command in ("restart", "signal"):
        code, output = run(monkeypatch, server, command, FULL, "nope")
        assert (code, output) == (1, "Error: Could not find task named: nope, Tasks available: t\n")
    code, output = run(monkeypatch, server, "restart", "-all-tasks", FULL, "t")
    assert code == 1 and "The -all-tasks option is not allowed when restarting a specific task." in output
    assert server.puts == []


def test_each_failure_reads_as_nomads(monkeypatch: pytest.MonkeyPatch) -> None:
    server = Server(failure="not running")
    assert run(monkeypatch, server, "restart", FULL) == (1, "Error: Failed to restart allocation:\n\nnot running\n")
    assert run(monkeypatch, server, "restart", FULL, "t") == (1, "Error: Failed to restart task:\n\nnot running\n")
    assert run(monkeypatch, server, "signal", FULL) == (1, "Error: Error signalling allocation: not running\n")
