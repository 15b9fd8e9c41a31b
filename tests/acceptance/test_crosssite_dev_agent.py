"""The red-team's drive-by against a real `corral agent -dev` (ACLs off, raw_exec on): a web page's
request (text/plain body, a foreign Origin, a rebound Host) is refused and writes no job, while
the same job sent as the CLI sends it runs on the agent's own client."""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest

from tests.support.processes import CorralFactory, free_port, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance
Conn = psycopg.Connection[tuple[object, ...]]
EVIL = "http://evil.example"


def touching_job(job_id: str, marker: Path) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/touch", "args": [str(marker)]}}
    return {"Job": {"ID": job_id, "Type": "batch", "TaskGroups": [{"Name": "g", "Tasks": [task]}]}}


def test_a_web_page_cannot_drive_the_dev_agent(
    corral: CorralFactory, database_url: str, pg: Conn, workdir: Path
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_DATABASE_URL": database_url}
    agent = corral(["agent", "-dev"], env=env, cwd=workdir)
    wait_healthy(base, agent)
    drive_by = json.dumps(touching_job("drive-by", workdir / "pwned")).encode()
    page = {"Content-Type": "text/plain;charset=UTF-8", "Origin": EVIL}

    # DNS rebinding: the page's own name now points at 127.0.0.1.
    rebound = httpx.post(f"{base}/v1/jobs", content=drive_by, headers={**page, "Host": f"evil.example:{port}"})
    assert rebound.status_code == 421 and rebound.json()["errors"][0]["field"] == "Host"
    # A cross-origin simple request to the loopback address itself.
    simple = httpx.post(f"{base}/v1/jobs", content=drive_by, headers=page)
    assert simple.status_code == 403 and simple.json()["errors"][0]["field"] == "Origin"
    # The body alone, without an Origin (a browser that sends none).
    no_origin = httpx.post(f"{base}/v1/jobs", content=drive_by, headers={"Content-Type": "text/plain"})
    assert no_origin.status_code == 415 and no_origin.json()["errors"][0]["field"] == "Content-Type"
    # The exec WebSocket: refused before anything is looked up or upgraded.
    upgrade = {"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Origin": EVIL}
    upgrade["Sec-WebSocket-Key"] = "dGhlIHNhbXBsZSBub25jZQ=="
    exec_url = f"{base}/v1/client/allocation/00000000-0000-0000-0000-000000000000/exec?task=t&command=%5B%22sh%22%5D"
    assert httpx.get(exec_url, headers=upgrade).status_code == 403
    assert pg.execute("SELECT id FROM jobs").fetchall() == []

    # The same job as the CLI sends it runs on the agent's client, so the refusals above were
    # all that stood between the page and a command run as this user.
    marker = workdir / "ran"
    httpx.put(f"{base}/v1/jobs", json=touching_job("from-cli", marker)).raise_for_status()
    assert wait_for(marker.exists), agent.output
    assert pg.execute("SELECT id FROM jobs").fetchall() == [("from-cli",)]
    assert not (workdir / "pwned").exists()

    ui = httpx.get(f"{base}/ui/")
    assert "frame-ancestors 'none'" in ui.headers["Content-Security-Policy"]
    assert ui.headers["X-Content-Type-Options"] == "nosniff"

    agent.process.send_signal(signal.SIGINT)
    assert agent.wait(60) == 0
