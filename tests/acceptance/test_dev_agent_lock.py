"""A second `corral agent -dev` on a data directory another agent holds is refused (exit 1, a
clear message) before it touches anything: the first agent, its database and its client go on."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from tests.support.processes import CorralFactory, free_port, postgres_running_in, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance


def test_a_second_agent_on_the_same_data_directory_is_refused(corral: CorralFactory, workdir: Path) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    first = corral(["agent", "-dev"], env={"CORRAL_BIND": f"127.0.0.1:{port}"})
    wait_healthy(base, first)
    # Its client registered: every file the first agent makes exists before the second starts.
    assert wait_for(lambda: len(httpx.get(f"{base}/v1/nodes").json()) == 1), first.output
    data_dir = workdir / ".corral"
    lock = data_dir / "agent.lock"
    assert lock.read_text().strip() == str(first.process.pid)
    postmaster = (data_dir / "postgres" / "postmaster.pid").read_text().splitlines()[0]
    assert [p.pid for p in postgres_running_in(data_dir) if str(p.pid) == postmaster]
    files_before = sorted(p.name for p in data_dir.iterdir())

    other_port = free_port()
    second = corral(["agent", "-dev"], env={"CORRAL_BIND": f"127.0.0.1:{other_port}"})
    assert second.wait(60) == 1, second.output
    assert f"another corral agent (pid {first.process.pid}) is using the data directory {data_dir}" in second.output
    assert "Traceback" not in second.output
    # Nothing touched: the lock still names the first agent, no new file, the same postmaster,
    # nothing listening on the second port, and the first agent still answers.
    assert lock.read_text().strip() == str(first.process.pid)
    assert sorted(p.name for p in data_dir.iterdir()) == files_before
    assert (data_dir / "postgres" / "postmaster.pid").read_text().splitlines()[0] == postmaster
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{other_port}/v1/agent/health", timeout=2)
    assert httpx.get(f"{base}/v1/agent/health", timeout=5).status_code == 200
    assert len(httpx.get(f"{base}/v1/nodes").json()) == 1
