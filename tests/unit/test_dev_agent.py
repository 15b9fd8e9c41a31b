"""The dev agent's decisions: log format, each role's environment, the port check, and when the API counts as up."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from app.settings.config import Settings
from app.settings.logging import resolve_format
from workers.agent import (
    Child,
    StartRefusedError,
    api_url,
    await_api,
    check_port_free,
    client_env,
    dev_client_role,
    dev_roles,
    role_env,
)

pytestmark = pytest.mark.unit


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_log_format_is_for_humans_on_a_terminal_and_json_otherwise() -> None:
    assert resolve_format("auto", Terminal()) == "console"
    assert resolve_format("auto", io.StringIO()) == "json"
    assert resolve_format("json", Terminal()) == "json"
    assert resolve_format("console", io.StringIO()) == "console"


def test_every_role_gets_the_agents_log_format_and_database() -> None:
    env = role_env({"PATH": "/bin", "CORRAL_LOG_FORMAT": "auto"}, "postgresql://x", "console", embedded=True)
    assert env["CORRAL_LOG_FORMAT"] == "console"
    assert env["CORRAL_DATABASE_URL"] == "postgresql://x"
    assert env["CORRAL_DATABASE_EMBEDDED"] == "true"
    assert env["PATH"] == "/bin"
    external = role_env({"CORRAL_DATABASE_EMBEDDED": "true"}, "postgresql://x", "json", embedded=False)
    assert external["CORRAL_DATABASE_EMBEDDED"] == "false"  # never inherited from the agent's own environment


def test_the_client_inherits_no_database_setting_credential_or_operator_token() -> None:
    roles = role_env(
        {
            "PATH": "/bin",
            "CORRAL_READ_DATABASE_URL": "postgresql://standby",
            "NOMAD_TOKEN": "operator-secret",
            "CORRAL_TOKEN": "operator-secret",
            "PGPASSWORD": "pw",
            "CORRAL_ACL_ENABLED": "true",
        },
        "postgresql://postgres@/corral",
        "console",
        embedded=True,
    )
    env = client_env(roles, token=None)
    assert env["PATH"] == "/bin" and env["CORRAL_ACL_ENABLED"] == "true" and env["CORRAL_LOG_FORMAT"] == "console"
    assert not [key for key in env if "DATABASE" in key or "TOKEN" in key or key.startswith("PG")]
    assert "operator-secret" not in env.values()
    assert client_env(roles, token="minted")["CORRAL_TOKEN"] == "minted"


def test_dev_server_runs_without_access_log_and_a_short_graceful_stop_unless_the_operator_says() -> None:
    roles = {role.name: role for role in dev_roles({})}
    assert set(roles) == {"server", "worker1", "worker2", "applier", "leader"}
    assert roles["server"].env == {"CORRAL_HTTP_ACCESS_LOG": "false", "CORRAL_HTTP_GRACEFUL_TIMEOUT_S": "1"}
    assert all(not role.env for name, role in roles.items() if name != "server")
    mine = {role.name: role for role in dev_roles({"CORRAL_HTTP_ACCESS_LOG": "true"})}
    assert mine["server"].env == {"CORRAL_HTTP_GRACEFUL_TIMEOUT_S": "1"}


def test_dev_client_destroys_its_allocations_and_reaches_the_api_on_loopback() -> None:
    client = dev_client_role(Settings(bind="0.0.0.0:4646", data_dir=Path("/d")))
    assert client.args[:4] == ["client", "--dev", "--server", "http://127.0.0.1:4646"]
    assert api_url("127.0.0.1:4646") == "http://127.0.0.1:4646"
    assert api_url("[::]:4646") == "http://[::1]:4646"


def test_a_taken_port_is_refused_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(StartRefusedError, match=f"port {port} .*already in use"):
            check_port_free(f"127.0.0.1:{port}")
    check_port_free(f"127.0.0.1:{port}")  # free again once the listener is gone


@pytest.mark.parametrize("bind", ["4646", "localhost:", "127.0.0.1:http", "127.0.0.1:70000"])
def test_a_malformed_bind_is_refused_naming_the_setting(bind: str) -> None:
    with pytest.raises(StartRefusedError, match="CORRAL_BIND"):
        check_port_free(bind)


def _exited_child() -> Child:
    process = subprocess.Popen([sys.executable, "-c", "raise SystemExit(3)"])
    process.wait()
    return Child("server", process)


def test_the_api_is_up_only_once_its_health_check_passes() -> None:
    answers = iter([False, False, True])
    probes: list[bool] = []

    def healthy() -> bool:
        probes.append(next(answers))
        return probes[-1]

    assert await_api(healthy, lambda: None, threading.Event(), poll_s=0)
    assert probes == [False, False, True]


def test_a_role_dying_or_ctrl_c_before_the_api_answers_ends_the_wait() -> None:
    dead = _exited_child()
    assert not await_api(lambda: True, lambda: dead, threading.Event(), poll_s=0)
    stop = threading.Event()
    stop.set()
    assert not await_api(lambda: True, lambda: None, stop, poll_s=0)
