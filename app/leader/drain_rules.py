"""The drainer's next step on one draining node (Nomad's drainer), pure: which allocations to
ask to migrate now, or whether the drain is complete. Past the force deadline everything goes
at once; before it, at most migrate.max_parallel per job and group are in flight; system jobs
go last (or never, if ignored); the drain completes once nothing it must move is left on the
node. The I/O step is app/leader/drain.py."""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from app.values.rfc3339 import unix_ns
from app.wire.node import DrainStrategyJson

SYSTEM_TYPES = ("system", "sysbatch")
# A migrating allocation that ended by itself while still wanted: nothing waits for it.
CLIENT_TERMINAL = ("complete", "failed", "lost")
# Job types whose clients judge an allocation's health by its group's migrate block
# (client/service_health/health.py).
HEALTH_JUDGED = ("service",)
GroupKey = tuple[str, str, str]  # namespace, job, task group


@dataclass(frozen=True)
class Strategy:
    force_deadline_ns: int  # 0: none
    ignore_system_jobs: bool = False

    @classmethod
    def of(cls, stored: DrainStrategyJson) -> Strategy:
        """From the node's drain_strategy column: Nomad's flat DrainStrategy JSON that
        app/store/node/drains.py writes (the force deadline an RFC 3339 time)."""
        return cls(unix_ns(stored.get("ForceDeadline")), bool(stored.get("IgnoreSystemJobs")))

    def forced(self, now_ns: int) -> bool:
        return 0 < self.force_deadline_ns <= now_ns


@dataclass(frozen=True)
class Candidate:
    """A live allocation on the node not yet asked to migrate."""

    alloc_id: uuid.UUID
    namespace: str
    job_id: str
    task_group: str
    job_type: str
    priority: int
    job_modify_index: int
    max_parallel: int

    @property
    def group(self) -> GroupKey:
        return (self.namespace, self.job_id, self.task_group)

    @property
    def system(self) -> bool:
        return self.job_type in SYSTEM_TYPES


@dataclass(frozen=True)
class Replacement:
    client_status: str
    healthy: bool | None = None  # the client's verdict under the group's migrate block


@dataclass(frozen=True)
class Migration:
    """An allocation on a draining node already asked to migrate, with its replacements."""

    namespace: str
    job_id: str
    task_group: str
    job_type: str
    client_status: str
    desired_status: str
    replacements: tuple[Replacement, ...] = ()

    @property
    def group(self) -> GroupKey:
        return (self.namespace, self.job_id, self.task_group)


@dataclass(frozen=True)
class Step:
    migrate: tuple[Candidate, ...] = ()
    complete: bool = False


def next_step(
    strategy: Strategy, candidates: Sequence[Candidate], migrations: Iterable[Migration], remaining: int, now_ns: int
) -> Step:
    """`remaining` counts the node's live allocations that keep the drain open (system ones
    unless ignored; `drain_remaining` in sql/queries/drain.sql). Nomad finishes a drain when
    the node's allocations are gone, not when their replacements are healthy; replacements
    only pace the next batch."""
    regular = [c for c in candidates if not c.system]
    system = [] if strategy.ignore_system_jobs else [c for c in candidates if c.system]
    if not regular and not system:
        return Step(complete=remaining == 0)
    if not regular:
        return Step(migrate=tuple(system))  # system jobs go last, once everything else has moved
    if strategy.forced(now_ns):
        return Step(migrate=tuple(regular))
    return Step(migrate=within_max_parallel(regular, in_flight(migrations)))


def in_flight(migrations: Iterable[Migration]) -> Counter[GroupKey]:
    """Per job and group, the migrations still holding a max_parallel slot."""
    return Counter(m.group for m in migrations if not migrated(m))


def migrated(migration: Migration) -> bool:
    """A migration frees its slot once a replacement has settled, or when the allocation ended
    by itself while still wanted."""
    if migration.client_status in CLIENT_TERMINAL and migration.desired_status == "run":
        return True
    return any(replaced(migration.job_type, r) for r in migration.replacements)


def replaced(job_type: str, replacement: Replacement) -> bool:
    """Nomad's drainer waits for a service replacement's health verdict (migrate.min_healthy_time
    of running, or unhealthy at migrate.healthy_deadline), not merely for it to run. Clients
    judge no health for batch work: there, running (or already complete) is enough. Any verdict
    counts, as in Nomad (AllocDeploymentStatus.HasHealth): a replacement that failed gets one
    too, and its own replacement no longer points at the migrated allocation."""
    if replacement.client_status == "complete":
        return True
    if job_type in HEALTH_JUDGED:
        return replacement.healthy is not None
    return replacement.client_status == "running"


def within_max_parallel(candidates: Sequence[Candidate], busy: Mapping[GroupKey, int]) -> tuple[Candidate, ...]:
    taken = Counter(busy)
    chosen = []
    for candidate in candidates:
        if taken[candidate.group] < max(1, candidate.max_parallel):
            taken[candidate.group] += 1
            chosen.append(candidate)
    return tuple(chosen)
