"""Nomad services on the client, the pure parts: registration IDs and addresses, check IDs,
the check status machine (success_before_passing, failures_before_critical), check_restart's
counting, deployment health that waits for checks, and ?choose= rendezvous selection."""

from __future__ import annotations

import hashlib
import http.server
import threading
from pathlib import Path
from typing import Any

import pytest

from app.api.routes.services import chosen, hash_with, parse_choose
from app.store.services import RegistrationJson
from app.values.errors import InvalidInput
from client.service_health.check_runner import probe_http, probe_script, probe_tcp
from client.service_health.checks import (
    FAILURE,
    NANOS,
    PENDING,
    SUCCESS,
    CheckSpec,
    CheckState,
    Probe,
    RestartCounter,
    all_passing,
    check_id,
    spec_of,
)
from client.service_health.health import HealthWatch
from client.service_health.services import registrations, service_id
from client.tasks.task_commands import TaskContext
from client.tasks.task_state import rfc3339
from client.tasks.taskenv import NodeInfo

pytestmark = pytest.mark.unit
ALLOC = "b4e61df9-b095-d64e-f241-23860da1375f"
T0 = 1_000.0


def _alloc(**group: Any) -> dict[str, Any]:
    tasks = [{"Name": "srv", "Services": [{"Name": "t-${NOMAD_TASK_NAME}", "PortLabel": "http", "Provider": "nomad"}]}]
    return {
        "ID": ALLOC,
        "TaskGroup": "web",
        "AllocatedResources": {"Shared": {"Ports": [{"Label": "http", "Value": 23456, "To": 0, "HostIP": "10.0.0.5"}]}},
        "Job": {
            "TaskGroups": [
                {
                    "Name": "web",
                    "Tasks": tasks,
                    "Services": [
                        {"Name": "web", "PortLabel": "http", "Provider": "nomad", "Tags": ["x-${NOMAD_ALLOC_INDEX}"]},
                        {"Name": "db", "PortLabel": "http", "Provider": "consul"},
                    ],
                    **group,
                }
            ]
        },
    }


def test_registration_ids_follow_nomads_make_alloc_service_id() -> None:
    assert service_id(ALLOC, "redis", "redis-http", "http") == f"_nomad-task-{ALLOC}-redis-redis-http-http"


def test_group_and_running_task_services_register_with_the_allocations_host_port() -> None:
    envs = {"srv": {"NOMAD_TASK_NAME": "srv", "NOMAD_ALLOC_INDEX": "1"}}
    regs = registrations(_alloc(), NodeInfo.of(None), envs, running={"srv"})
    assert regs == [
        {
            "ID": f"_nomad-task-{ALLOC}-group-web-web-http",
            "ServiceName": "web",
            "Tags": ["x-1"],
            "Address": "10.0.0.5",
            "Port": 23456,
        },
        {
            "ID": f"_nomad-task-{ALLOC}-srv-t-srv-http",
            "ServiceName": "t-srv",
            "Tags": [],
            "Address": "10.0.0.5",
            "Port": 23456,
        },
    ]
    # A task that does not run (yet) has nothing registered; Consul services never are.
    assert [r["ServiceName"] for r in registrations(_alloc(), NodeInfo.of(None), envs, running=set())] == ["web"]


def test_check_ids_hash_the_checks_identity_as_nomad() -> None:
    check = {
        "Name": "c",
        "Type": "http",
        "PortLabel": "",
        "OnUpdate": "require_healthy",
        "Interval": 10 * NANOS,
        "Timeout": 2 * NANOS,
        "Path": "/health",
        "Method": "GET",
        "TaskName": "",
    }
    digest = hashlib.sha256()
    for part in (ALLOC, "web", "", "c", "http", "", "require_healthy", ""):
        digest.update(part.encode())
    digest.update((10 * NANOS).to_bytes(8, "little"))
    digest.update((2 * NANOS).to_bytes(8, "little"))
    for part in ("", "/health", "GET", "false"):
        digest.update(part.encode())
    assert check_id(ALLOC, "web", check) == digest.hexdigest()
    assert check_id(ALLOC, "web", {**check, "Path": "/other"}) != digest.hexdigest()


def _state(**check: Any) -> CheckState:
    base = {"Type": "http", "Interval": NANOS, "Timeout": NANOS, "Path": "/"}
    return CheckState(spec_of(ALLOC, "web", "web", "", "127.0.0.1", 80, {**base, **check}))


OK, BAD = Probe(True, "ok", 200), Probe(False, "nomad: http response code was 500", 500)


def test_a_check_is_pending_until_its_first_result_then_follows_each_one() -> None:
    state = _state()
    assert state.status == PENDING and state.result()["Status"] == "pending"
    assert state.observe(OK, T0) == SUCCESS
    assert state.observe(BAD, T0 + 1) == FAILURE
    result = state.result()
    assert (result["Status"], result["StatusCode"], result["Mode"], result["Group"], result["Service"]) == (
        "failure",
        500,
        "healthiness",
        "web",
        "web",
    )
    assert "Task" not in result and result["Timestamp"] == int(T0 + 1)


def test_success_before_passing_and_failures_before_critical_need_that_many_in_a_row() -> None:
    state = _state(SuccessBeforePassing=3, FailuresBeforeCritical=2)
    assert [state.observe(p, T0) for p in (OK, OK, BAD, OK, OK)] == [PENDING] * 5  # the streak broke
    assert state.observe(OK, T0 + 5) == SUCCESS
    assert state.observe(BAD, T0 + 6) == SUCCESS  # one failure is not yet critical
    assert state.observe(OK, T0 + 7) == SUCCESS
    assert state.observe(BAD, T0 + 8) == SUCCESS
    assert state.observe(BAD, T0 + 9) == FAILURE


def test_check_restart_counts_consecutive_failures_after_the_grace() -> None:
    counter = RestartCounter(limit=3, grace_s=10)
    counter.started(T0)
    assert not any(counter.observe(FAILURE, T0 + s) for s in range(5))  # within the grace
    assert [counter.observe(FAILURE, T0 + 10 + s) for s in range(3)] == [False, False, True]
    # The restart starts a new grace, and a passing result starts the count again.
    assert not counter.observe(FAILURE, T0 + 15)
    assert [counter.observe(s, T0 + 30 + i) for i, s in enumerate((FAILURE, FAILURE, SUCCESS, FAILURE, FAILURE))] == [
        False
    ] * 5
    assert counter.observe(FAILURE, T0 + 40)
    assert not RestartCounter(limit=0, grace_s=0).observe(FAILURE, T0)


def test_readiness_checks_are_not_judged_for_health() -> None:
    healthy, ready = _state(), _state(OnUpdate="ignore")
    healthy.observe(OK, T0)
    ready.observe(BAD, T0)
    assert ready.result()["Mode"] == "readiness"
    assert all_passing([healthy, ready]) == (True, T0)
    assert all_passing([_state()]) == (False, 0.0)


def _deploying(health_check: str = "checks") -> dict[str, Any]:
    update = {"MinHealthyTime": 10 * NANOS, "HealthyDeadline": 60 * NANOS, "HealthCheck": health_check}
    return {"DeploymentID": "d1", "TaskGroup": "g", "Job": {"TaskGroups": [{"Name": "g", "Update": update}]}}


RUNNING = [{"State": "running", "Failed": False, "StartedAt": rfc3339(int(T0 * NANOS))}]


def test_deployment_health_waits_for_passing_checks_and_fails_at_the_deadline() -> None:
    watch = HealthWatch.of(_deploying(), T0)
    assert watch is not None
    assert not watch.judge("running", RUNNING, T0 + 30, (False, 0.0))  # tasks up for 30 s, checks failing
    assert not watch.judge("running", RUNNING, T0 + 35, (True, T0 + 30))  # passing for only 5 s
    assert watch.judge("running", RUNNING, T0 + 40, (True, T0 + 30))
    assert watch.healthy is True

    failing = HealthWatch.of(_deploying(), T0)
    assert failing is not None
    assert failing.judge("running", RUNNING, T0 + 60, (False, 0.0))
    assert failing.healthy is False

    by_tasks = HealthWatch.of(_deploying("task_states"), T0)  # checks are not its business
    assert by_tasks is not None and by_tasks.judge("running", RUNNING, T0 + 10, (False, 0.0))
    assert by_tasks.healthy is True


def _reg(alloc: str, port: int) -> RegistrationJson:
    return {
        "ID": f"_nomad-task-{alloc}-g-web-http",
        "ServiceName": "web",
        "Namespace": "default",
        "NodeID": "n",
        "Datacenter": "dc1",
        "JobID": "j",
        "AllocID": alloc,
        "Tags": ["a"],
        "Address": "10.0.0.1",
        "Port": port,
        "CreateIndex": 1,
        "ModifyIndex": 1,
    }


def test_choose_is_rendezvous_hashing_with_nomads_hash() -> None:
    regs = [_reg(f"alloc-{i}", 8000 + i) for i in range(6)]
    digest = hashlib.sha256()
    digest.update((8000).to_bytes(8, "big"))
    for part in ("alloc-0", regs[0]["ID"], "default", "10.0.0.1", "web", "a", "key"):
        digest.update(part.encode())
    assert hash_with(regs[0], "key") == digest.hexdigest()
    picked = chosen(regs, 3, "key")
    assert len(picked) == 3 and picked == chosen(list(reversed(regs)), 3, "key")  # stable, order-free
    survivors = [r for r in regs if r is not picked[-1]]
    assert chosen(survivors, 2, "key") == picked[:2]  # removing one moves only its own callers
    assert len(chosen(regs, 10, "key")) == 6
    assert parse_choose("2|abc") == (2, "abc")
    for bad in ("2", "x|k", "2|", "|k"):
        with pytest.raises(InvalidInput):
            parse_choose(bad)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        code = 200 if self.path == "/ok" else 302 if self.path == "/moved" else 500
        self.send_response(code)
        if code == 302:
            self.send_header("Location", "/ok")
        self.send_header("X-Seen", self.headers.get("X-Probe", ""))
        self.end_headers()
        self.wfile.write(b"broken" if code == 500 else b"fine")

    def log_message(self, *args: Any) -> None:
        return


def _probe_spec(kind: str, port: int, **check: Any) -> CheckSpec:
    base = {"Type": kind, "Interval": NANOS, "Timeout": NANOS, "Path": "/ok", **check}
    return spec_of(ALLOC, "web", "web", "srv", "127.0.0.1", port, base)


def test_probes_judge_as_nomads_http_tcp_and_script_checks(tmp_path: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    try:
        assert probe_http(_probe_spec("http", port, Header={"X-Probe": ["1"]})) == Probe(True, "nomad: http ok", 200)
        assert probe_http(_probe_spec("http", port, Path="/moved")).ok  # redirects are followed
        failed = probe_http(_probe_spec("http", port, Path="/bad"))
        assert (failed.ok, failed.status_code, failed.output) == (False, 500, "broken")
        assert probe_tcp(_probe_spec("tcp", port)) == Probe(True, "nomad: tcp ok")
    finally:
        server.shutdown()
        server.server_close()
    assert not probe_tcp(_probe_spec("tcp", port)).ok  # nothing listens any more
    assert not probe_http(_probe_spec("http", port)).ok

    context = TaskContext("raw_exec", tmp_path, {"PATH": "/usr/bin:/bin", "GREETING": "hi"})
    script = _probe_spec("script", 0, Command="/bin/sh", Args=["-c", 'echo "$GREETING from $(pwd)"; exit 0'])
    assert probe_script(script, context) == Probe(True, f"hi from {tmp_path}\n")
    assert not probe_script(_probe_spec("script", 0, Command="/bin/false"), context).ok
    assert "cannot run commands in its tasks" in probe_script(script, TaskContext("mock", tmp_path, {})).output
    assert "not running" in probe_script(script, None).output
