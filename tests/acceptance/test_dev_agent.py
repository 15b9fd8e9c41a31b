"""`corral agent -dev` as a user runs it: embedded Postgres, migrations, the API; Ctrl-C stops it all."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx
import psutil
import psycopg
import pytest

from tests.support.processes import Corral, free_port, postgres_running_in, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance

JOB = {"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}}


def socket_url(data_dir: Path) -> str:
    return f"postgresql://postgres@/corral?host={data_dir / 'postgres'}"


def test_dev_agent_end_to_end_and_ctrl_c_stops_everything(corral: type[Corral], workdir: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    agent = corral(["agent", "-dev"], env={"CORRAL_BIND": f"127.0.0.1:{port}"})
    wait_healthy(base, agent)
    data_dir = workdir / ".corral"
    assert (data_dir / "postgres" / "PG_VERSION").exists()
    children = agent.descendants()
    assert children, "the agent runs its roles as child processes"

    registered = httpx.put(f"{base}/v1/jobs", json=JOB).json()
    assert registered["EvalID"]
    evaluation = httpx.get(f"{base}/v1/evaluation/{registered['EvalID']}").json()
    assert evaluation["TriggeredBy"] == "job-register"
    # The dev agent's own client (raw_exec and mock) runs it.
    assert wait_for(lambda: httpx.get(f"{base}/v1/evaluation/{registered['EvalID']}").json()["Status"] == "complete")

    def running() -> bool:
        allocs = httpx.get(f"{base}/v1/job/web/allocations").json()
        return [a["ClientStatus"] for a in allocs] == ["running"]

    assert wait_for(running)
    with psycopg.connect(socket_url(data_dir)) as conn:
        assert conn.execute("SELECT job_id, task_group, desired, queued FROM v_job_summary").fetchall() == [
            ("web", "g", 1, 0)
        ]
        assert conn.execute("SELECT status FROM nodes").fetchall() == [("ready",)]
        roles = {r[0] for r in conn.execute("SELECT application_name FROM pg_stat_activity").fetchall()}
        assert {"corral-api", "corral-worker", "corral-applier", "corral-leader"} <= roles

    batch = {
        "Job": {
            "ID": "hello",
            "Type": "batch",
            "TaskGroups": [
                {"Name": "g", "Tasks": [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "true"}}]}
            ],
        }
    }
    httpx.put(f"{base}/v1/jobs", json=batch).raise_for_status()
    assert wait_for(
        lambda: [a["ClientStatus"] for a in httpx.get(f"{base}/v1/job/hello/allocations").json()] == ["complete"]
    )

    bad = httpx.put(f"{base}/v1/jobs", json={"Job": {"ID": "x", "TaskGroups": []}})
    assert bad.status_code == 400 and bad.json()["errors"][0]["field"].startswith("Job.TaskGroups")

    agent.process.send_signal(signal.SIGINT)
    assert agent.wait(60) == 0
    for child in children:
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE
    assert postgres_running_in(data_dir) == []
    assert "server |" in agent.output, "role logs are merged with a role prefix"


def test_data_dir_is_reused_and_a_killed_agent_leaves_no_roles(corral: type[Corral], workdir: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"CORRAL_BIND": f"127.0.0.1:{port}"}
    first = corral(["agent", "-dev"], env=env)
    wait_healthy(base, first)
    httpx.put(f"{base}/v1/jobs", json=JOB).raise_for_status()
    roles = [p for p in first.descendants() if "postgres" not in " ".join(p.cmdline())]
    first.process.send_signal(signal.SIGKILL)
    first.wait(30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in roles):
        time.sleep(0.2)
    assert not any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in roles)

    second = corral(["agent", "-dev"], env=env)
    wait_healthy(base, second)
    assert [j["ID"] for j in httpx.get(f"{base}/v1/jobs").json()] == ["web"]
    second.process.send_signal(signal.SIGINT)
    assert second.wait(60) == 0
    assert postgres_running_in(workdir / ".corral") == []
