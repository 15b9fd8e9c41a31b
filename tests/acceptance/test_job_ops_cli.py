"""`corral job scale`, `job history` and `job revert` against a real server process."""

from __future__ import annotations

import httpx
import pytest

from tests.support.processes import CorralFactory, free_port, wait_healthy

pytestmark = pytest.mark.acceptance


def test_scale_history_and_revert_through_the_cli(corral: CorralFactory, database_url: str) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = corral(["server"], env={"CORRAL_DATABASE_URL": database_url, "CORRAL_BIND": f"127.0.0.1:{port}"})
    wait_healthy(base, server)
    cli = {"CORRAL_ADDR": base}
    job = {
        "ID": "web",
        "TaskGroups": [
            {"Name": "g", "Count": 2, "Scaling": {"Min": 1, "Max": 4}, "Tasks": [{"Name": "t", "Driver": "mock"}]}
        ],
    }
    assert httpx.put(f"{base}/v1/jobs", json={"Job": job}).status_code == 200

    scaled = corral(["job", "scale", "-detach", "web", "3"], env=cli)
    assert scaled.wait() == 0, scaled.output
    assert "scaled to 3" in scaled.output and "Evaluation ID:" in scaled.output
    too_many = corral(["job", "scale", "-detach", "web", "g", "9"], env=cli)
    assert too_many.wait() != 0 and "Count" in too_many.output and "maximum 4" in too_many.output

    history = corral(["job", "history", "web"], env=cli)
    assert history.wait() == 0, history.output
    versions = [line.split(" = ")[1] for line in history.output.splitlines() if line.startswith("Version ")]
    assert versions == ["1", "0"]

    reverted = corral(["job", "revert", "-detach", "web", "0"], env=cli)
    assert reverted.wait() == 0, reverted.output
    current = httpx.get(f"{base}/v1/job/web").json()
    assert (current["Version"], current["TaskGroups"][0]["Count"]) == (2, 2)
    stale = corral(["job", "revert", "-detach", "-check-version", "1", "web", "0"], env=cli)
    assert stale.wait() != 0 and "409" in stale.output
