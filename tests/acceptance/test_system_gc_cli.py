"""`corral system gc` and `corral system gc-runs` against real server and worker processes."""

from __future__ import annotations

import pytest

from bench.gc_fill import fill_terminal
from tests.processes import Corral, free_port, wait_healthy

pytestmark = pytest.mark.acceptance


def test_system_gc_collects_and_reports_and_gc_runs_lists_it(corral: type[Corral], database_url: str) -> None:
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


def test_system_gc_names_an_unreachable_api(corral: type[Corral]) -> None:
    gc = corral(["system", "gc"], env={"CORRAL_ADDR": f"http://127.0.0.1:{free_port()}"})
    assert gc.wait(60) == 1
    assert "cannot reach corral" in gc.output


def test_gc_runs_limit_out_of_range_is_a_usage_error(corral: type[Corral]) -> None:
    runs = corral(["system", "gc-runs", "--limit", "0"], env={"CORRAL_ADDR": "http://127.0.0.1:1"})
    assert runs.wait(60) == 2
    assert "--limit" in runs.output
