"""`corral alloc stop` against real processes (server, worker, applier, leader and a `corral
client` with the mock driver): the allocation stops on its client and a replacement runs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance


@pytest.fixture
def cluster(corral: CorralFactory, database_url: str, workdir: Path) -> Iterator[Cluster]:
    running = Cluster(corral, database_url, workdir)
    yield running
    running.close()


def test_alloc_stop_ends_with_the_original_stopped_and_a_replacement_running(
    cluster: Cluster, corral: CorralFactory
) -> None:
    cluster.client("c1", "--driver", "mock")
    cluster.register(job("web", [mock_task()], count=2))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("web")] == ["running"] * 2, 60)
    original, sibling = cluster.allocs("web")

    stop = corral(["alloc", "stop", original["ID"][:8]], env={"CORRAL_ADDR": cluster.base})
    assert stop.wait() == 0, stop.output
    assert f"Allocation {original['ID']} stop requested" in stop.output

    def replaced() -> bool:
        by_id = {a["ID"]: a for a in cluster.allocs("web")}
        old = by_id[original["ID"]]
        new = [a for a in by_id.values() if a.get("PreviousAllocation") == original["ID"]]
        return (
            old["DesiredStatus"] == "stop"
            and old["ClientStatus"] == "complete"
            and len(new) == 1
            and new[0]["ClientStatus"] == "running"
        )

    assert wait_for(replaced, 60)
    cluster.settle()
    allocs = {a["ID"]: a for a in cluster.allocs("web")}
    assert len(allocs) == 3
    assert allocs[sibling["ID"]]["ClientStatus"] == "running" and allocs[sibling["ID"]]["DesiredStatus"] == "run"
    (replacement,) = [a for a in allocs.values() if a.get("PreviousAllocation") == original["ID"]]
    assert replacement["Name"] == original["Name"]
    trigger = cluster.pg.execute(
        "SELECT triggered_by, status FROM evaluations WHERE id = %s", (replacement["EvalID"],)
    ).fetchone()
    assert trigger == ("alloc-stop", "complete")

    again = corral(["alloc", "stop", original["ID"]], env={"CORRAL_ADDR": cluster.base})
    assert again.wait() != 0 and "400" in again.output
