"""Nodes as the scheduler reads them: one node, and the canonical ordered set of them all."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from types import MappingProxyType
from typing import TypeVar, cast

from app.structs.resources import Resources
from app.wire.node import NodeEligibility, NodeStatus

T = TypeVar("T")


@dataclass(frozen=True)
class Node:
    id: uuid.UUID
    name: str
    datacenter: str
    node_class: str
    node_pool: str
    computed_class: str
    status: NodeStatus
    eligibility: NodeEligibility
    draining: bool
    capacity: Resources
    reserved: Resources
    attributes: Mapping[str, str] = field(default_factory=dict)
    meta: Mapping[str, str] = field(default_factory=dict)
    healthy_drivers: frozenset[str] = frozenset()
    reserved_ports: frozenset[int] = frozenset()
    min_dynamic_port: int = 20000
    max_dynamic_port: int = 32000
    # NodeResources.Cpu.ReservableCpuCores: the core IDs tasks may reserve whole; () when the
    # node did not report them (then cpu.numcores counts them from 0).
    reservable_cores: tuple[int, ...] = ()

    # Host volumes the client declares: name -> whether it is read-only (Node.HostVolumes).
    host_volumes: Mapping[str, bool] = field(default_factory=dict)
    # Ready dynamic host volumes on the node (Nomad 1.10): (namespace, name) -> the volume's ID;
    # only jobs of that namespace may mount one (the ID is what a sticky group claims).
    dynamic_host_volumes: Mapping[tuple[str, str], uuid.UUID] = field(default_factory=dict)

    @cached_property
    def core_ids(self) -> tuple[int, ...]:
        """The cores a `cores` ask may take, in order."""
        if self.reservable_cores:
            return tuple(sorted(self.reservable_cores))
        count = self.attributes.get("cpu.numcores", "")
        return tuple(range(int(count))) if count.isdigit() else ()

    @cached_property
    def mhz_per_core(self) -> int:
        """Nomad's SharesPerCore: the node's CPU over its cores."""
        count = self.attributes.get("cpu.numcores", "")
        cores = int(count) if count.isdigit() and int(count) > 0 else len(self.core_ids)
        return self.capacity.cpu // cores if cores else 0

    @cached_property
    def id_text(self) -> str:
        """The ID as text, made once per node object: a big plan's placement metrics name each
        of a few thousand nodes many times among their best scores."""
        return str(self.id)

    @cached_property
    def allocatable(self) -> Resources:
        """Capacity minus reserved; made once per node (a pass asks for every candidate it ranks,
        and a worker keeps the same Node objects until the nodes table changes)."""
        return self.capacity - self.reserved

    @property
    def ready_for_placement(self) -> bool:
        """Nomad's Node.Ready(): status ready, not draining, eligible."""
        return self.status == "ready" and not self.draining and self.eligibility == "eligible"


class NodeSet(tuple[Node, ...]):
    """Nodes in canonical order (by the ID's 128-bit integer, which is also Postgres's order of
    uuid values), with an index by ID. Both are built once: a worker keeps one NodeSet for as
    long as the nodes table's state index stays put, so the thousands of nodes are not sorted
    and indexed again for every evaluation. The pass seed's shuffle starts from this order, which
    is what makes a plan independent of the order the rows arrived in."""

    by_id: Mapping[uuid.UUID, Node]
    _derived: dict[Hashable, object]

    def __new__(cls, nodes: Iterable[Node]) -> NodeSet:
        ordered = super().__new__(cls, sorted(nodes, key=_node_id_int))
        ordered.by_id = MappingProxyType({node.id: node for node in ordered})
        ordered._derived = {}
        return ordered

    def derived(self, key: Hashable, compute: Callable[[], T]) -> T:
        """What `compute` makes of these nodes, made once per NodeSet and key: the nodes a job's
        datacenters and pool admit, counts per datacenter. Every evaluation on the same nodes
        asks the same; scanning thousands of nodes for each was a fifth of a worker's pass.
        `compute` must depend on the nodes and the key only. Scheduling threads share a NodeSet:
        two of them computing the same key at once both store the same value."""
        found = self._derived.get(key, _ABSENT)
        if found is _ABSENT:
            found = compute()
            if len(self._derived) >= _DERIVED_LIMIT:  # jobs with ever new scopes: start over
                self._derived.clear()
            self._derived[key] = found
        return cast(T, found)


# Distinct keys kept per NodeSet: a cluster's jobs use a handful of datacenter and pool scopes.
_DERIVED_LIMIT = 256
_ABSENT = object()


def _node_id_int(node: Node) -> int:
    # The UUID's integer: comparing uuid.UUID objects costs a Python call per comparison.
    return node.id.int
