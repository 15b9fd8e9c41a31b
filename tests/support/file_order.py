"""A pytest plugin: the slowest test files run first, so the run's tail is short files.

Under `--dist loadfile` a file runs whole on one worker, and xdist hands files out in collection
order once its own reorder (by number of tests, most first) is off (`--no-loadscope-reorder` in
pyproject's addopts). xdist's reorder put the acceptance files of one or two long tests last: a
worker that drew the chaos soak near the end ran it for over a minute while the other sat idle.
Here files go longest first (a greedy schedule's best order): the known-slow ones by their
seconds on CI, then the rest by tier, real processes before databases before pure code. Only the
order changes: every collected test still runs, and a test's place in its file is kept."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import pytest

T = TypeVar("T")

# Seconds per file on CI (2 cores, -n auto): the sum of the file's tests among the slowest of
# the green run of 2561ef8 (`--durations=30`), rounded. A file missing here falls back to its
# tier; refresh from a run with `--durations=0` when the slowest files change.
KNOWN_SECONDS: dict[str, float] = {
    "tests/acceptance/test_dev_agent.py": 100,  # with the data-directory lock check (was its own file, 26 s)
    "tests/concurrency/test_pipeline_processes.py": 83,
    "tests/acceptance/test_chaos.py": 79,
    "tests/acceptance/test_services.py": 52,
    "tests/acceptance/test_client.py": 46,
    "tests/acceptance/test_deployments.py": 45,
    "tests/acceptance/test_fleet.py": 44,
    "tests/acceptance/test_job_files_cli.py": 39,
    "tests/acceptance/test_exec_bridge.py": 35,
    "tests/concurrency/test_gc_processes.py": 31,
    "tests/ui/test_ui_actions.py": 29,
    "tests/acceptance/test_wheel.py": 28,
    "tests/acceptance/test_agent_config.py": 28,
    "tests/acceptance/test_failover.py": 22,
    "tests/integration/test_fuzz_routes.py": 22,
    "tests/acceptance/test_alloc_stop.py": 20,
    "tests/acceptance/test_api_limits.py": 20,
    "tests/acceptance/test_service_stack_scenario.py": 20,
    "tests/acceptance/test_crosssite_dev_agent.py": 19,
    "tests/acceptance/test_client_routes.py": 18,
    "tests/acceptance/test_rolling_upgrade.py": 18,
    "tests/acceptance/test_server.py": 16,
    "tests/acceptance/test_docker_driver.py": 15,
    "tests/acceptance/test_cli_sweep.py": 15,
    "tests/integration/test_acl_route_walk.py": 15,
    "tests/acceptance/test_host_volumes_and_logs.py": 15,
}

# Files not listed: real processes first, then several connections, then one database per test,
# then pure code (whose files are short; they fill the tail).
TIER_RANK = {"acceptance": 0, "ui": 0, "concurrency": 1, "integration": 2, "unit": 3}


def file_key(path: str) -> tuple[int, float, str]:
    """Sort key of a test file (its path relative to the root): known-slow first, longest first."""
    if path in KNOWN_SECONDS:
        return (-1, -KNOWN_SECONDS[path], path)
    parts = path.split("/")
    tier = parts[1] if len(parts) > 2 and parts[0] == "tests" else ""
    return (TIER_RANK.get(tier, len(TIER_RANK)), 0.0, path)


def sorted_by_file(items: list[T], nodeid: Callable[[T], str]) -> list[T]:
    """ITEMS with their files in `file_key` order; stable, so a file's tests keep their order."""
    return sorted(items, key=lambda item: file_key(nodeid(item).split("::", 1)[0]))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    items[:] = sorted_by_file(items, lambda item: item.nodeid)
