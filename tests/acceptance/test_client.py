"""Real `corral client` processes against a real cluster: raw_exec work runs and completes, a
killed client's node goes down and its allocations are replaced once, tasks restart per their
policy, and client-side GC keeps the newest allocations."""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.cluster import Cluster, Site, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance


@pytest.fixture(scope="module")
def shared(module_corral: CorralFactory, module_database_url: str, module_workdir: Path) -> Iterator[Cluster]:
    """The servers (API, worker, applier, leader) every test here but the last shares."""
    running = Cluster(module_corral, module_database_url, module_workdir)
    yield running
    running.close()


@pytest.fixture
def cluster(shared: Cluster, request: pytest.FixtureRequest) -> Iterator[Site]:
    site = Site(shared, f"dc-{request.node.name.removeprefix('test_')[:40]}")
    yield site
    site.close()


def test_raw_exec_batch_job_runs_sleep_and_completes(cluster: Site) -> None:
    cluster.client("c1")
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", "echo started; sleep 1; echo done >&2"]},
        "Resources": {"CPU": 10, "MemoryMB": 10},
    }
    cluster.register(job("sleepy", [task], kind="batch"))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("sleepy")] == ["complete"], 60)
    alloc = cluster.allocs("sleepy")[0]
    events = [e["Type"] for e in alloc["TaskStates"]["t"]["Events"]]
    assert events[0] == "Started" and "Terminated" in events
    assert alloc["TaskStates"]["t"]["Failed"] is False
    out = cluster.http.get(f"/v1/client/fs/logs/{alloc['ID']}", params={"task": "t", "type": "stdout", "plain": "true"})
    err = cluster.http.get(f"/v1/client/fs/logs/{alloc['ID']}", params={"task": "t", "type": "stderr", "plain": "true"})
    assert (out.text, err.text) == ("started\n", "done\n")


def test_jobs_go_only_to_nodes_with_their_driver(cluster: Site) -> None:
    cluster.client("mock-only", "--driver", "mock")
    cluster.register(job("needs-exec", [{"Name": "t", "Driver": "raw_exec", "Config": {"command": "true"}}]))
    cluster.settle()
    assert cluster.allocs("needs-exec") == []
    blocked = cluster.pg.execute("SELECT count(*) FROM evaluations WHERE job_id = 'needs-exec' AND status = 'blocked'")
    assert blocked.fetchone() == (1,)


def test_killed_client_goes_down_and_its_allocations_are_replaced_once(cluster: Site) -> None:
    doomed = cluster.client("doomed")
    cluster.register(job("lost-web", [mock_task()], count=2))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("lost-web")] == ["running"] * 2, 60)
    survivor = cluster.client("survivor")
    doomed_id = cluster.node_id("doomed")
    doomed.process.send_signal(signal.SIGKILL)
    doomed.process.wait()
    assert wait_for(lambda: cluster.node_status("doomed") == "down", 60)

    def replaced() -> bool:
        live = [a for a in cluster.allocs("lost-web") if a["ClientStatus"] == "running"]
        return len(live) == 2 and all(a["NodeName"] == cluster.name("survivor") for a in live)

    assert wait_for(replaced, 60)
    cluster.settle()
    allocs = cluster.allocs("lost-web")
    lost = [a for a in allocs if a["NodeID"] == doomed_id]
    assert len(allocs) == 4 and {a["ClientStatus"] for a in lost} == {"lost"}
    replacements = [a for a in allocs if a["NodeName"] == cluster.name("survivor")]
    assert sorted(a["PreviousAllocation"] for a in replacements) == sorted(a["ID"] for a in lost)
    assert survivor.process.poll() is None


def test_failing_task_restarts_per_policy_then_fails(cluster: Site) -> None:
    cluster.client("c1")
    restart = {"Attempts": 2, "Interval": 3_600_000_000_000, "Delay": 200_000_000, "Mode": "fail"}
    no_reschedule = {"Attempts": 0, "Unlimited": False, "Interval": 3_600_000_000_000}
    failing = job(
        "flaky",
        [mock_task(run_for="100ms", exit_code=3)],
        kind="batch",
        RestartPolicy=restart,
        ReschedulePolicy=no_reschedule,
    )
    cluster.register(failing)
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("flaky")] == ["failed"], 60)
    state = cluster.allocs("flaky")[0]["TaskStates"]["t"]
    assert state["Restarts"] == 2 and state["Failed"] is True
    assert [e["Type"] for e in state["Events"]].count("Restarting") == 2
    failure = cluster.pg.execute(
        "SELECT count(*) FROM evaluations WHERE job_id = 'flaky' AND triggered_by = 'alloc-failure'"
    )
    assert failure.fetchone() == (0,), "no reschedule attempts: the servers do not ask for one"


def test_gc_keeps_the_newest_allocations_and_destroys_the_oldest_first(cluster: Site) -> None:
    cluster.client("c1", "--gc-max-allocs", "50", "--cpu-total-compute", "4000", "--memory-total-mb", "4096")
    cluster.register(job("many", [mock_task(run_for="10ms")], count=60, kind="batch"))

    def finished() -> bool:
        allocs = cluster.allocs("many")
        return len(allocs) == 60 and all(a["ClientStatus"] == "complete" for a in allocs)

    assert wait_for(finished, 120)

    def gone() -> tuple[object, ...] | None:
        return cluster.pg.execute(
            "SELECT count(*) FROM allocations WHERE job_id = 'many' AND client_gc_time IS NOT NULL"
        ).fetchone()

    assert wait_for(lambda: gone() == (10,), 60)
    allocs = cluster.allocs("many")
    by_finish = sorted(allocs, key=lambda a: a["TaskStates"]["t"]["FinishedAt"])
    destroyed = {
        str(r[0])
        for r in cluster.pg.execute(
            "SELECT id FROM allocations WHERE job_id = 'many' AND client_gc_time IS NOT NULL"
        ).fetchall()
    }
    assert destroyed == {a["ID"] for a in by_finish[:10]}
    on_disk = {p.name for p in (cluster.client_dir("c1") / ".corral-client" / "allocs").iterdir()}
    assert on_disk == {a["ID"] for a in by_finish[10:]}
    # A forced GC (what `system gc` asks of every client) destroys the rest, thresholds or not.
    # With a node, its client is asked over the signed link and has collected by the answer.
    forced = cluster.http.put("/v1/client/gc", params={"node_id": cluster.node_id("c1")})
    assert forced.status_code == 200 and forced.json()["Nodes"] == 1 and "Collected" in forced.json()
    assert not list((cluster.client_dir("c1") / ".corral-client" / "allocs").iterdir())
    assert wait_for(lambda: gone() == (60,), 60)


def test_failing_task_restarts_then_reschedules_after_the_delay_onto_another_node(cluster: Site) -> None:
    cluster.client("c1")
    cluster.client("c2")
    restart = {"Attempts": 1, "Interval": 3_600_000_000_000, "Delay": 100_000_000, "Mode": "fail"}
    reschedule = {
        "Attempts": 1,
        "Interval": 3_600_000_000_000,
        "Delay": 5_000_000_000,
        "DelayFunction": "constant",
        "Unlimited": False,
    }
    failing = job(
        "crashy", [mock_task(run_for="200ms", exit_code=1)], RestartPolicy=restart, ReschedulePolicy=reschedule
    )
    cluster.register(failing)

    def both_failed() -> bool:
        return [a["ClientStatus"] for a in cluster.allocs("crashy")] == ["failed", "failed"]

    assert wait_for(both_failed, 90)
    cluster.settle()
    first, second = sorted(cluster.allocs("crashy"), key=lambda a: a["CreateIndex"])
    assert all(a["TaskStates"]["t"]["Restarts"] == 1 for a in (first, second))
    assert second["PreviousAllocation"] == first["ID"] and second["NodeID"] != first["NodeID"]
    (event,) = second["RescheduleTracker"]["Events"]
    assert event["Delay"] == 5_000_000_000 and event["PrevNodeID"] == first["NodeID"]
    # The replacement was placed by the delayed evaluation, not before the delay was up.
    placed_after = cluster.pg.execute(
        "SELECT r.create_time >= e.wait_until, e.triggered_by FROM allocations r, allocations f "
        "JOIN evaluations e ON e.id = f.followup_eval_id WHERE r.id = %s AND f.id = %s",
        (second["ID"], first["ID"]),
    ).fetchone()
    assert placed_after == (True, "alloc-failure")
    # One reschedule per hour: the second failure is final.
    assert cluster.pg.execute("SELECT followup_eval_id FROM allocations WHERE id = %s", (second["ID"],)).fetchone() == (
        None,
    )


def test_drain_moves_allocations_respecting_max_parallel(cluster: Site, corral: CorralFactory) -> None:
    cluster.client("old")
    # The client judges each replacement healthy after migrate.min_healthy_time (1 s here).
    cluster.register(
        job("drained-web", [mock_task()], count=3, Migrate={"MaxParallel": 1, "MinHealthyTime": 1_000_000_000})
    )
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("drained-web")] == ["running"] * 3, 60)
    cluster.client("new")
    old = cluster.node_id("old")
    drained = corral(["node", "drain", "-enable", "-no-deadline", old], env={"CORRAL_ADDR": cluster.base})
    assert drained.wait(60) == 0, drained.output
    peak = 0

    def moved() -> bool:
        nonlocal peak
        allocs = cluster.allocs("drained-web")
        by_id = {a["ID"]: a for a in allocs}
        healthy = [a for a in allocs if a["ClientStatus"] == "running" and (a["DeploymentStatus"] or {}).get("Healthy")]
        replaced = {a["PreviousAllocation"] for a in healthy}
        # Asked to migrate and no healthy replacement yet: what max_parallel limits.
        in_flight = [a for a in allocs if a["DesiredTransition"].get("Migrate") and a["ID"] not in replaced]
        peak = max(peak, len(in_flight))
        live = [a for a in by_id.values() if a["ClientStatus"] == "running" and a["DesiredStatus"] == "run"]
        return len(live) == 3 and all(a["NodeName"] == cluster.name("new") for a in live)

    assert wait_for(moved, 90)
    assert peak <= 1
    assert wait_for(lambda: cluster.http.get(f"/v1/node/{old}").json()["DrainStrategy"] is None, 60)
    node = cluster.http.get(f"/v1/node/{old}").json()
    assert node["SchedulingEligibility"] == "ineligible" and node["LastDrain"]["Status"] == "complete"
    # The full node has no Drain flag in Nomad (its DrainStrategy says it); the list stub has.
    assert [n["Drain"] for n in cluster.http.get("/v1/nodes").json() if n["ID"] == old] == [False]
    replacements = [a for a in cluster.allocs("drained-web") if a["NodeName"] == cluster.name("new")]
    # One migration at a time: each replacement was placed by its own node-drain evaluation.
    evals = {a["EvalID"] for a in replacements}
    triggers = {cluster.http.get(f"/v1/evaluation/{e}").json()["TriggeredBy"] for e in evals}
    assert len(evals) == 3 and triggers == {"node-drain"}


def test_client_that_returns_within_lost_after_keeps_one_allocation_per_slot(cluster: Site) -> None:
    away = cluster.client("away")
    cluster.register(job("away-web", [mock_task()], count=2, Disconnect={"LostAfter": "10m"}))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("away-web")] == ["running"] * 2, 60)
    originals = {a["ID"] for a in cluster.allocs("away-web")}
    cluster.client("stays")
    away.process.send_signal(signal.SIGSTOP)  # a partition: the client is alive but silent
    try:
        assert wait_for(lambda: cluster.node_status("away") == "disconnected", 60)

        def replaced() -> bool:
            allocs = cluster.allocs("away-web")
            unknown = {a["ID"] for a in allocs if a["ClientStatus"] == "unknown"}
            running_elsewhere = [
                a for a in allocs if a["NodeName"] == cluster.name("stays") and a["ClientStatus"] == "running"
            ]
            return unknown == originals and len(running_elsewhere) == 2

        assert wait_for(replaced, 60)
    finally:
        away.process.send_signal(signal.SIGCONT)
    assert wait_for(lambda: cluster.node_status("away") == "ready", 60)

    def one_per_slot() -> bool:
        live = [a for a in cluster.allocs("away-web") if a["DesiredStatus"] == "run" and a["ClientStatus"] == "running"]
        return {a["ID"] for a in live} == originals

    assert wait_for(one_per_slot, 60), [
        (a["ID"][:8], a["PreviousAllocation"][:8], a["NodeName"], a["DesiredStatus"], a["ClientStatus"])
        for a in cluster.allocs("away-web")
    ]
    cluster.settle()
    allocs = cluster.allocs("away-web")
    assert {a["ID"] for a in allocs if a["DesiredStatus"] == "run"} == originals
    dropped = [a for a in allocs if a["ID"] not in originals]
    assert len(dropped) == 2 and {a["DesiredDescription"] for a in dropped} == {
        "alloc not needed as node is reconnected"
    }
    assert not [a for a in allocs if a["ClientStatus"] == "lost"]
    reconnect = cluster.pg.execute(
        "SELECT count(*) FROM evaluations WHERE job_id = 'away-web' AND triggered_by = 'reconnect'"
    )
    found = reconnect.fetchone()
    assert found is not None and isinstance(found[0], int) and found[0] >= 1


def test_restarted_client_reattaches_to_its_task_and_stop_kills_the_process_group(
    corral: CorralFactory, database_url: str, workdir: Path
) -> None:
    # A TTL far longer than a restart: the node must not be marked down meanwhile.
    cluster = Cluster(corral, database_url, workdir, {"CORRAL_HEARTBEAT_MIN_TTL_S": "60"})
    first = cluster.client("c1")
    script = "sleep 300 & echo $! > child.pid; wait"
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", script]},
        "KillTimeout": 2_000_000_000,
        "Resources": {"CPU": 10, "MemoryMB": 10},
    }
    cluster.register(job("long", [task]))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("long")] == ["running"], 60)
    alloc_id = cluster.allocs("long")[0]["ID"]
    pid_file = workdir / "c1" / ".corral-client" / "allocs" / alloc_id / "t" / "child.pid"
    assert wait_for(pid_file.exists, 30)
    child = psutil.Process(int(pid_file.read_text()))
    first.process.send_signal(signal.SIGTERM)
    assert first.wait(30) == 0
    assert child.is_running(), "tasks outlive their client, as in Nomad"

    second = cluster.client("c1")
    assert wait_for(lambda: "restored allocations" in second.output, 30)
    assert cluster.allocs("long")[0]["ClientStatus"] == "running" and len(cluster.allocs("long")) == 1
    cluster.http.delete("/v1/job/long").raise_for_status()
    assert wait_for(lambda: cluster.allocs("long")[0]["ClientStatus"] == "complete", 60)
    assert wait_for(lambda: not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, 30)
    events = [e["Type"] for e in cluster.allocs("long")[0]["TaskStates"]["t"]["Events"]]
    assert "Killing" in events and "Killed" in events
    cluster.close()
