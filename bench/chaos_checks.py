"""What the chaos soak (bench/chaos.py) checks: the safety invariants of DESIGN.md while the
faults land, whether the cluster has converged to the acknowledged state, and that no
acknowledged write was lost; and what it found."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench.chaos_processes import Postgres

LIVE = "('pending', 'running')"


@dataclass
class Expected:
    """What the last acknowledged write says a job must look like."""

    stopped: bool = False
    count: int = 1
    modify_index: int = 0
    unknown: bool = False  # a later write's outcome is unknown: nothing to check against


@dataclass
class Results:
    faults: Counter[str] = field(default_factory=Counter)
    acked: Counter[str] = field(default_factory=Counter)
    unacked: Counter[str] = field(default_factory=Counter)
    violations: dict[str, list[str]] = field(default_factory=dict)
    checks: Counter[str] = field(default_factory=Counter)

    def violate(self, name: str, detail: str) -> None:
        found = self.violations.setdefault(name, [])
        if len(found) < 5:
            found.append(detail)


@dataclass(frozen=True)
class Invariant:
    """A safety invariant: the rows `sql` finds break it, each told as `describe` says."""

    name: str
    sql: str
    describe: Callable[[tuple[Any, ...]], str]


SAFETY = (
    Invariant(
        "no overcommit",
        "SELECT n.name, sum(a.cpu), n.cpu_shares - n.reserved_cpu, sum(a.memory_mb), "
        "n.memory_mb - n.reserved_memory_mb FROM nodes n JOIN allocations a ON a.node_id = n.id "
        f"WHERE a.desired_status = 'run' AND a.client_status IN {LIVE} "
        "GROUP BY n.id HAVING sum(a.cpu) > n.cpu_shares - n.reserved_cpu "
        "OR sum(a.memory_mb) > n.memory_mb - n.reserved_memory_mb",
        lambda row: f"node {row[0]}: cpu {row[1]}/{row[2]} memory {row[3]}/{row[4]}",
    ),
    Invariant(
        "at most one evaluation in flight per job",
        "SELECT namespace, job_id, count(*) FROM evaluations WHERE status = 'pending' "
        "AND lease_token IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1",
        lambda row: f"{row[1]}: {row[2]} leased",
    ),
    Invariant(
        "no duplicate allocation",
        "SELECT job_id, name, count(*) FROM allocations "
        f"WHERE desired_status = 'run' AND client_status IN {LIVE} GROUP BY namespace, job_id, name "
        "HAVING count(*) > 1",
        lambda row: f"{row[0]} {row[1]}: {row[2]} live",
    ),
)


def safety(pg: Postgres, r: Results) -> None:
    """Count one check of each safety invariant and note what breaks it."""
    for invariant in SAFETY:
        rows = pg.query(invariant.sql)
        r.checks[invariant.name] += 1
        for row in rows:
            r.violate(invariant.name, invariant.describe(row))


def converged(pg: Postgres, expected: dict[str, Expected]) -> list[str]:
    """What still differs from the desired state; empty once the cluster has settled."""
    problems = []
    ready_evals = pg.query(
        "SELECT count(*) FROM evaluations WHERE status = 'pending' "
        "AND (wait_until IS NULL OR wait_until <= now()) AND (not_before IS NULL OR not_before <= now())"
    )[0][0]
    leased = pg.query("SELECT count(*) FROM evaluations WHERE lease_token IS NOT NULL")[0][0]
    plans = pg.query("SELECT count(*) FROM plans WHERE status = 'pending'")[0][0]
    if ready_evals or leased or plans:
        problems.append(f"no stuck evaluation: {ready_evals} ready, {leased} leased, {plans} plans pending")
    unran = pg.query(
        "SELECT n.name, a.name, a.client_status FROM allocations a JOIN nodes n ON n.id = a.node_id "
        "WHERE n.status = 'ready' AND a.desired_status = 'run' AND a.client_status <> 'running' "
        "AND a.client_status NOT IN ('complete', 'failed', 'lost')"
    )
    for row in unran[:5]:
        problems.append(f"every live node runs what is placed on it: {row[0]} has {row[1]} {row[2]}")
    running = dict(
        pg.query(
            "SELECT a.job_id, count(*) FROM allocations a JOIN nodes n ON n.id = a.node_id "
            "WHERE a.desired_status = 'run' AND a.client_status = 'running' AND n.status = 'ready' "
            "GROUP BY a.job_id"
        )
    )
    for job_id, want in sorted(expected.items()):
        if want.unknown:
            continue
        have = running.get(job_id, 0)
        goal = 0 if want.stopped else want.count
        if have != goal:
            problems.append(f"jobs converge to their acknowledged state: {job_id} runs {have}, wants {goal}")
    return problems


def check_acked(pg: Postgres, expected: dict[str, Expected], r: Results) -> None:
    """Every acknowledged write is in the database (a later one may have changed it since)."""
    rows = {
        str(row[0]): row[1:]
        for row in pg.query("SELECT id, stop, job_modify_index, spec->'TaskGroups'->0->>'Count' FROM jobs")
    }
    r.checks["no acknowledged write lost"] += 1
    for job_id, want in sorted(expected.items()):
        if want.unknown:
            continue
        row = rows.get(job_id)
        if row is None:
            r.violate("no acknowledged write lost", f"{job_id}: acknowledged but not in the database")
            continue
        stop, modify_index, count = bool(row[0]), int(row[1]), int(row[2] or 0)
        if stop != want.stopped or modify_index < want.modify_index or (not stop and count != want.count):
            got = f"stop={stop} index={modify_index} count={count}"
            r.violate("no acknowledged write lost", f"{job_id}: {got}, acknowledged {want}")
