"""`corral system gc` and `corral system gc-runs` against real server and worker processes."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from bench.gc_fill import fill_terminal
from tests.support.processes import CorralFactory, free_port, wait_healthy

pytestmark = pytest.mark.acceptance


def test_system_gc_collects_and_reports_and_gc_runs_lists_it(corral: CorralFactory, database_url: str) -> None:
    fill_terminal(database_url, jobs=8, evals_per_job=5)
    port = free_port()
    env = {"CORRAL_DATABASE_URL": database_url, "CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_POLL_INTERVAL_S": "0.2"}
    server = corral(["server"], env=env)
    corral(["worker", "--schedulers", "_core"], env=env)
    wait_healthy(f"http://127.0.0.1:{port}", server)
    cli_env = {"CORRAL_ADDR": f"http://127.0.0.1:{port}"}

    gc = corral(["system", "gc"], env=cli_env)
    assert gc.wait(120) == 0, gc.output
    assert "complete in" in gc.output
    removed = {line.split()[0]: int(line.split()[1]) for line in gc.output.splitlines() if line.startswith("  ")}
    assert removed["evaluations"] == 40 and removed["allocations"] == 40 and removed["jobs"] == 2

    runs = corral(["system", "gc-runs", "--limit", "5"], env=cli_env)
    assert runs.wait(60) == 0, runs.output
    rows = [line.split() for line in runs.output.splitlines()[1:]]
    assert rows[0][1:3] == ["force-gc", "complete"]

    # Forced collections at once: each later run collects the earlier ones' finished
    # evaluations, and every caller still gets its own run's answer.
    with ThreadPoolExecutor(3) as pool:
        answers = list(pool.map(lambda _: httpx.put(f"http://127.0.0.1:{port}/v1/system/gc", timeout=120), range(3)))
    assert [a.status_code for a in answers] == [200, 200, 200], [a.text for a in answers]
    assert len({a.json()["ID"] for a in answers}) == 3


def test_system_gc_that_outlasts_the_server_wait_says_what_to_do(corral: CorralFactory, database_url: str) -> None:
    port = free_port()
    env = {"CORRAL_DATABASE_URL": database_url, "CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_FORCE_GC_WAIT_S": "1"}
    server = corral(["server"], env=env)  # and no worker: the collection waits in the queue
    wait_healthy(f"http://127.0.0.1:{port}", server)
    gc = corral(["system", "gc"], env={"CORRAL_ADDR": f"http://127.0.0.1:{port}"})
    assert gc.wait(60) == 1, gc.output
    assert "carries on in the background" in gc.output
    assert "corral system gc-runs" in gc.output


def test_system_gc_names_an_unreachable_api(corral: CorralFactory) -> None:
    gc = corral(["system", "gc"], env={"CORRAL_ADDR": f"http://127.0.0.1:{free_port()}"})
    assert gc.wait(60) == 1
    assert "cannot reach corral" in gc.output


def test_gc_runs_limit_out_of_range_is_a_usage_error(corral: CorralFactory) -> None:
    runs = corral(["system", "gc-runs", "--limit", "0"], env={"CORRAL_ADDR": "http://127.0.0.1:1"})
    assert runs.wait(60) == 2
    assert "--limit" in runs.output
