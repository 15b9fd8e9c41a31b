"""What a node offers and an allocation holds: resources and host ports, and their sum over
the live allocations on one node."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Resources:
    cpu: int = 0
    memory_mb: int = 0
    disk_mb: int = 0
    memory_max_mb: int = 0

    def __add__(self, other: Resources) -> Resources:
        return Resources(
            cpu=self.cpu + other.cpu,
            memory_mb=self.memory_mb + other.memory_mb,
            disk_mb=self.disk_mb + other.disk_mb,
            memory_max_mb=self.memory_max_mb + other.memory_max_mb,
        )

    def __sub__(self, other: Resources) -> Resources:
        return Resources(
            cpu=self.cpu - other.cpu,
            memory_mb=self.memory_mb - other.memory_mb,
            disk_mb=self.disk_mb - other.disk_mb,
            memory_max_mb=self.memory_max_mb - other.memory_max_mb,
        )

    def fits_within(self, capacity: Resources) -> bool:
        """The dimensions that are reserved on a node (memory_max is a burst limit, not a reservation)."""
        return self.cpu <= capacity.cpu and self.memory_mb <= capacity.memory_mb and self.disk_mb <= capacity.disk_mb


@dataclass(frozen=True)
class Port:
    label: str
    value: int
    to: int = 0
    host_network: str = "default"


@dataclass(frozen=True)
class TaskCores:
    """Whole cores reserved for one task (Nomad's AllocatedCpuResources.ReservedCores) and the
    CPU they count for: the cores times the node's MHz per core."""

    task: str
    cores: tuple[int, ...]
    cpu: int


@dataclass(frozen=True)
class NodeUsage:
    """What the live (non-terminal) allocations on one node hold: the fit function's input."""

    resources: Resources = Resources()
    ports: frozenset[int] = frozenset()
    cores: frozenset[int] = frozenset()  # core IDs reserved whole (resources { cores = N })
