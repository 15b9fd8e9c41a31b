"""A task group as the scheduler reads it: its tasks, placement rules and update, reschedule
and disconnect policies. Durations are integer nanoseconds."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from app.structs.resources import Port, Resources
from app.wire.json import JsonValue


@dataclass(frozen=True)
class NetworkAsk:
    mode: str = "host"
    reserved_ports: tuple[Port, ...] = ()
    dynamic_ports: tuple[Port, ...] = ()


@dataclass(frozen=True)
class Constraint:
    ltarget: str
    operand: str
    rtarget: str


@dataclass(frozen=True)
class Affinity:
    ltarget: str
    operand: str
    rtarget: str
    weight: int


@dataclass(frozen=True)
class SpreadTarget:
    value: str
    percent: int


@dataclass(frozen=True)
class Spread:
    attribute: str
    weight: int
    targets: tuple[SpreadTarget, ...] = ()


@dataclass(frozen=True)
class UpdateStrategy:
    max_parallel: int
    health_check: str
    min_healthy_time_ns: int
    healthy_deadline_ns: int
    progress_deadline_ns: int
    auto_revert: bool
    auto_promote: bool
    canary: int
    stagger_ns: int


@dataclass(frozen=True)
class ReschedulePolicy:
    attempts: int
    interval_ns: int
    delay_ns: int
    delay_function: str
    max_delay_ns: int
    unlimited: bool


@dataclass(frozen=True)
class Task:
    name: str
    driver: str
    resources: Resources
    constraints: tuple[Constraint, ...] = ()
    affinities: tuple[Affinity, ...] = ()
    config: Mapping[str, JsonValue] = field(default_factory=dict)  # the driver's, compared whole
    # Env and meta changes are destructive updates in Nomad, so the scheduler must see them.
    env: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, str] = field(default_factory=dict)
    cores: int = 0  # Resources.Cores: whole cores instead of a CPU share


@dataclass(frozen=True)
class DisconnectStrategy:
    """Group `disconnect` (or the older max_client_disconnect): how long allocations on a
    disconnected node stay `unknown` before they are lost, whether they are replaced meanwhile,
    and which of original and replacement stays when the node comes back."""

    lost_after_ns: int
    replace: bool = True
    reconcile: str = "best_score"


@dataclass(frozen=True)
class HostVolumeAsk:
    """A group's `volume { type = "host" }`: the node's host volume `source`, and whether the
    group only reads it (a read-write ask needs a volume the node does not declare read-only).
    `per_alloc`: each allocation mounts `source[N]`, N its index; `sticky`: the group keeps to
    the dynamic host volume it was first placed with (Nomad's VolumeRequest)."""

    source: str
    read_only: bool = False
    sticky: bool = False
    per_alloc: bool = False

    def source_for(self, alloc_name: str) -> str:
        return volume_source(self.source, self.per_alloc, alloc_name)


def volume_source(source: str, per_alloc: bool, alloc_name: str) -> str:
    """Nomad's VolumeRequest source for one allocation: a per_alloc request's source carries the
    allocation's index suffix (AllocSuffix: `data` for `web.db[2]` is `data[2]`)."""
    if not per_alloc:
        return source
    bracket = alloc_name.rfind("[")
    return source + (alloc_name[bracket:] if bracket >= 0 else "")


@dataclass(frozen=True)
class TaskGroup:
    name: str
    count: int
    tasks: tuple[Task, ...]
    ephemeral_disk_mb: int
    constraints: tuple[Constraint, ...] = ()
    affinities: tuple[Affinity, ...] = ()
    spreads: tuple[Spread, ...] = ()
    networks: tuple[NetworkAsk, ...] = ()
    update: UpdateStrategy | None = None
    reschedule: ReschedulePolicy | None = None
    disconnect: DisconnectStrategy | None = None
    host_volumes: tuple[HostVolumeAsk, ...] = ()

    @property
    def resources(self) -> Resources:
        """What one allocation of this group reserves on a node."""
        total = Resources(disk_mb=self.ephemeral_disk_mb)
        for task in self.tasks:
            total = total + task.resources
        return total

    @property
    def core_asks(self) -> tuple[tuple[str, int], ...]:
        """(task, cores) for each task asking for whole cores."""
        return tuple((task.name, task.cores) for task in self.tasks if task.cores > 0)

    @property
    def drivers(self) -> frozenset[str]:
        return frozenset(task.driver for task in self.tasks)
