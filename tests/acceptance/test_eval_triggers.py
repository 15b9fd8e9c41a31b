"""Evaluation triggers produced by the leader's own clocks, against real processes: the garbage
collector's `scheduled` core evaluations, and the `rolling-update` follow-ups of a system job
whose update block staggers its allocations."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance
SECOND = 1_000_000_000


@pytest.fixture(scope="module")
def cluster(module_corral: CorralFactory, module_database_url: str, module_workdir: Path) -> Iterator[Cluster]:
    """One cluster for both tests: only the system job's test starts clients (its job runs on
    every node there is)."""
    running = Cluster(module_corral, module_database_url, module_workdir, settings={"CORRAL_EVAL_GC_INTERVAL_S": "1"})
    yield running
    running.close()


def evals(cluster: Cluster, trigger: str) -> list[tuple[Any, ...]]:
    return cluster.pg.execute(
        "SELECT type, job_id, status, wait_until, previous_eval FROM evaluations WHERE triggered_by = %s "
        "ORDER BY create_index",
        (trigger,),
    ).fetchall()


def test_gc_interval_creates_scheduled_core_evaluations(cluster: Cluster) -> None:
    assert wait_for(lambda: any(e[2] == "complete" for e in evals(cluster, "scheduled")), 30)
    kinds = {(e[0], e[1]) for e in evals(cluster, "scheduled")}
    assert ("_core", "eval-gc") in kinds


def test_system_job_update_rolls_one_node_per_stagger(cluster: Cluster) -> None:
    for name in ("c1", "c2", "c3"):
        cluster.client(name, "--driver", "mock")

    def system(tag: str) -> dict[str, Any]:
        spec = job("sys", [mock_task(tag=tag)], kind="system")
        spec["Update"] = {"MaxParallel": 1, "Stagger": 2 * SECOND}
        return spec

    def versions() -> list[int]:
        return sorted(a["JobVersion"] for a in cluster.allocs("sys") if a["DesiredStatus"] == "run")

    def running(version: int) -> bool:
        allocs = [a for a in cluster.allocs("sys") if a["DesiredStatus"] == "run"]
        return len(allocs) == 3 and all(a["JobVersion"] == version and a["ClientStatus"] == "running" for a in allocs)

    cluster.register(system("v0"))
    assert wait_for(lambda: running(0), 60), cluster.allocs("sys")
    cluster.register(system("v1"))
    assert wait_for(lambda: versions().count(1) >= 1, 30), cluster.allocs("sys")
    first = time.monotonic()
    assert versions().count(1) == 1  # one node per pass; the rest waits for the stagger
    assert wait_for(lambda: running(1), 60), cluster.allocs("sys")
    assert time.monotonic() - first >= 3.5  # two more batches, each at least one stagger apart
    follow_ups = evals(cluster, "rolling-update")
    assert len(follow_ups) == 2
    assert all(e[1] == "sys" and e[2] == "complete" and e[3] is not None and e[4] is not None for e in follow_ups)
