"""`corral server` and `corral db` against an existing database (CORRAL_DATABASE_URL)."""

from __future__ import annotations

import signal

import httpx
import pytest

from tests.support.processes import CorralFactory, free_port, wait_healthy

pytestmark = pytest.mark.acceptance


def test_server_refuses_an_unmigrated_database(corral: CorralFactory, empty_database_url: str) -> None:
    server = corral(
        ["server"], env={"CORRAL_DATABASE_URL": empty_database_url, "CORRAL_BIND": f"127.0.0.1:{free_port()}"}
    )
    assert server.wait(60) != 0
    assert "corral db upgrade" in server.output


def test_db_upgrade_then_server_serves(corral: CorralFactory, empty_database_url: str) -> None:
    env = {"CORRAL_DATABASE_URL": empty_database_url}
    upgrade = corral(["db", "upgrade"], env=env)
    assert upgrade.wait(120) == 0, upgrade.output
    current = corral(["db", "current"], env=env)
    assert current.wait(60) == 0
    lines = [line for line in current.output.splitlines() if line.startswith(("current:", "head:"))]
    assert lines[0].split()[-1] == lines[1].split()[-1]

    port = free_port()
    server = corral(["server"], env={**env, "CORRAL_BIND": f"127.0.0.1:{port}"})
    wait_healthy(f"http://127.0.0.1:{port}", server)
    resp = httpx.get(f"http://127.0.0.1:{port}/v1/jobs")
    assert resp.status_code == 200 and resp.headers["X-Nomad-Index"]
    server.process.send_signal(signal.SIGTERM)
    assert server.wait(60) == 0
    # The API workers leave without the interpreter's teardown, where gevent and logging's
    # weakref callbacks printed "Exception ignored in: _removeHandlerRef" on every stop.
    assert "Exception ignored" not in server.output and "Traceback" not in server.output, server.output


def test_help_lists_the_roles(corral: CorralFactory) -> None:
    helper = corral(["--help"])
    assert helper.wait(60) == 0
    for command in ("agent", "server", "db"):
        assert command in helper.output
