"""The drainer's next step on one draining node (app/leader/drain_rules.py)."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from app.leader.drain_rules import Candidate, Migration, Replacement, Step, Strategy, next_step
from app.wire.node import DrainStrategyJson

pytestmark = pytest.mark.unit
NOW = 1_000_000 * 1_000_000_000
NO_DEADLINE = Strategy(force_deadline_ns=0)


def candidate(job: str = "web", job_type: str = "service", max_parallel: int = 1, group: str = "g") -> Candidate:
    return Candidate(uuid.uuid4(), "default", job, group, job_type, 50, 1, max_parallel)


def migration(
    job: str, *replacements: Replacement, job_type: str = "service", status: str = "running", desired: str = "stop"
) -> Migration:
    return Migration("default", job, "g", job_type, status, desired, replacements)


def test_the_strategy_reads_the_stored_column() -> None:
    stored: DrainStrategyJson = {
        "Deadline": 5,
        "IgnoreSystemJobs": True,
        "ForceDeadline": "2023-11-14T22:13:20.000000007Z",
        "StartedAt": "2023-11-14T22:13:20Z",
    }
    # Microseconds are what Python's datetime keeps: the force deadline is read to that grain.
    assert Strategy.of(stored) == Strategy(1_700_000_000 * 1_000_000_000, True)
    assert Strategy.of({"ForceDeadline": "0001-01-01T00:00:00Z"}) == Strategy(0, False)
    legacy: Any = {"ForceDeadline": None}  # as rows written before the flat shape held it
    assert Strategy.of(legacy) == Strategy(0, False)


def test_max_parallel_per_job_and_group_counts_what_is_in_flight() -> None:
    web = [candidate(max_parallel=2) for _ in range(3)]
    api = [candidate("api") for _ in range(2)]
    step = next_step(NO_DEADLINE, [*web, *api], [], remaining=5, now_ns=NOW)
    assert step.migrate == (web[0], web[1], api[0])
    busy = [migration("web"), migration("api")]  # no replacement yet: both hold their slot
    assert next_step(NO_DEADLINE, [*web, *api], busy, remaining=5, now_ns=NOW).migrate == (web[0],)


def test_a_service_migration_frees_its_slot_only_once_its_replacement_has_a_health_verdict() -> None:
    web = [candidate() for _ in range(2)]
    for waiting in (Replacement("pending"), Replacement("running")):  # running, not yet healthy
        assert next_step(NO_DEADLINE, web, [migration("web", waiting)], 2, NOW).migrate == ()
    healthy, unhealthy = Replacement("running", healthy=True), Replacement("running", healthy=False)
    assert next_step(NO_DEADLINE, web, [migration("web", healthy)], 2, NOW).migrate == (web[0],)
    # Unhealthy at migrate.healthy_deadline: Nomad's drainer moves on too.
    assert next_step(NO_DEADLINE, web, [migration("web", unhealthy)], 2, NOW).migrate == (web[0],)
    assert next_step(NO_DEADLINE, web, [migration("web", Replacement("complete"))], 2, NOW).migrate == (web[0],)


def test_a_batch_migration_frees_its_slot_once_its_replacement_runs() -> None:
    work = [candidate("work", "batch") for _ in range(2)]
    pending = migration("work", Replacement("pending"), job_type="batch")
    assert next_step(NO_DEADLINE, work, [pending], 2, NOW).migrate == ()
    running = migration("work", Replacement("running"), job_type="batch")
    assert next_step(NO_DEADLINE, work, [running], 2, NOW).migrate == (work[0],)


def test_a_migration_that_ended_by_itself_frees_its_slot() -> None:
    web = [candidate() for _ in range(2)]
    ended = migration("web", status="failed", desired="run")
    assert next_step(NO_DEADLINE, web, [ended], 2, NOW).migrate == (web[0],)


def test_past_the_force_deadline_everything_goes_at_once() -> None:
    web = [candidate() for _ in range(3)]
    assert next_step(Strategy(NOW - 1), web, [migration("web")], 3, NOW).migrate == tuple(web)
    assert next_step(Strategy(NOW + 1), web, [migration("web")], 3, NOW).migrate == ()


def test_system_jobs_go_last_or_never_when_ignored() -> None:
    web, system = candidate(), candidate("sys", "system")
    assert next_step(Strategy(NOW), [web, system], [], 2, NOW).migrate == (web,)
    assert next_step(NO_DEADLINE, [system], [], 1, NOW).migrate == (system,)
    ignoring = Strategy(0, ignore_system_jobs=True)
    assert next_step(ignoring, [system], [], 0, NOW) == Step(complete=True)


def test_the_drain_completes_only_when_nothing_is_left_on_the_node() -> None:
    assert next_step(NO_DEADLINE, [], [], remaining=1, now_ns=NOW) == Step()
    assert next_step(NO_DEADLINE, [], [], remaining=0, now_ns=NOW) == Step(complete=True)
