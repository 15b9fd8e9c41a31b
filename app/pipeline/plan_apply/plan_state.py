"""What a batch of plans is checked against, read once for the whole batch inside the applier's
transaction: the nodes the plans touch, their usage (kept by the allocation triggers) and host
ports, and the allocations the plans place, stop or evict."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, TypedDict, cast

import psycopg
from psycopg.rows import dict_row

from app.pipeline.plan_apply.plan_check import BatchState, Touched, plan_alloc_ids, plan_nodes
from app.pipeline.snapshot_rows import parse_port_list
from app.store.sql import psycopg_query
from app.structs import Node, NodeUsage, Plan, Resources
from app.wire.allocation import AllocClientStatus, AllocDesiredStatus

LIVE_CLIENT = ("pending", "running", "unknown")


@dataclass(frozen=True)
class StateReads:
    """The batch's reads, sent (in the caller's pipeline) but not yet read back."""

    nodes: psycopg.Cursor[Any]
    ports: psycopg.Cursor[Any]
    usage: psycopg.Cursor[Any]
    touched: psycopg.Cursor[dict[str, Any]]  # plan_touched_allocs: TouchedRow's columns

    def state(self) -> BatchState:
        return BatchState(
            nodes={r[0]: _node(r) for r in self.nodes.fetchall()},
            usage=_usage(self.ports.fetchall(), self.usage.fetchall()),
            touched={r["id"]: _touched(r) for r in cast(list[TouchedRow], self.touched.fetchall())},
        )


@cache
def binary_ids(name: str) -> str:
    """psycopg_query(name) with its UUID lists (:ids, :tokens) sent in binary: psycopg dumps a
    list in text one element at a time in Python, about 7 times slower than in binary (measured:
    410 against 56 us for 200 UUIDs), and a batch sends a thousand of them."""
    return psycopg_query(name).replace("%(ids)s", "%(ids)b").replace("%(tokens)s", "%(tokens)b")


def send_reads(pg: psycopg.Connection[Any], plans: Sequence[Plan]) -> StateReads:
    """Send the reads for `plans`: inside a pipeline they share one round trip with whatever
    else the caller sends."""
    node_ids = {"ids": list({n for plan in plans for n in plan_nodes(plan)})}
    alloc_ids = {"ids": list({a for plan in plans for a in plan_alloc_ids(plan)})}
    return StateReads(
        nodes=pg.cursor().execute(binary_ids("plan_check_nodes"), node_ids, prepare=True),
        ports=pg.cursor().execute(binary_ids("plan_node_ports"), node_ids, prepare=True),
        usage=pg.cursor().execute(binary_ids("plan_node_usage"), node_ids, prepare=True),
        touched=pg.cursor(row_factory=dict_row).execute(binary_ids("plan_touched_allocs"), alloc_ids, prepare=True),
    )


# Nodes as last built, by their row (every column plan_check_nodes reads): a node's row rarely
# changes, and a batch of small plans touches about as many nodes as it has placements, each
# built anew for every batch otherwise (about a tenth of the pipelined reader's time). Frozen,
# so shared safely; emptied when it grows past NODE_CACHE_ROWS (rows of changed nodes linger).
_nodes_by_row: dict[tuple[Any, ...], Node] = {}
NODE_CACHE_ROWS = 20_000


def _node(row: tuple[Any, ...]) -> Node:
    node = _nodes_by_row.get(row)
    if node is None:
        if len(_nodes_by_row) >= NODE_CACHE_ROWS:
            _nodes_by_row.clear()
        node = _nodes_by_row[row] = _built(row)
    return node


def _built(row: tuple[Any, ...]) -> Node:
    """A node as the fit check reads it: attributes, meta and drivers are the scheduler's
    concern (feasibility), not the applier's, and decoding them was most of a batch's check."""
    (
        id_,
        computed_class,
        status,
        eligibility,
        drain,
        cpu,
        memory_mb,
        disk_mb,
        reserved_cpu,
        reserved_memory_mb,
        reserved_disk_mb,
        reserved_ports,
    ) = row
    return Node(
        id=id_,
        name="",
        datacenter="",
        node_class="",
        node_pool="",
        computed_class=computed_class,
        status=status,
        eligibility=eligibility,
        draining=drain,
        capacity=Resources(cpu=cpu, memory_mb=memory_mb, disk_mb=disk_mb),
        reserved=Resources(cpu=reserved_cpu, memory_mb=reserved_memory_mb, disk_mb=reserved_disk_mb),
        reserved_ports=parse_port_list(reserved_ports or ""),
    )


def _usage(port_rows: list[Any], usage_rows: list[Any]) -> dict[uuid.UUID, NodeUsage]:
    ports: dict[uuid.UUID, set[int]] = defaultdict(set)
    cores: dict[uuid.UUID, set[int]] = defaultdict(set)
    for node_id, host_ports, reserved_cores in port_rows:
        ports[node_id].update(host_ports)
        if reserved_cores:
            cores[node_id].update(reserved_cores)
    usage = {n: NodeUsage(ports=frozenset(ports[n]), cores=frozenset(cores.get(n, ()))) for n in ports}
    for node_id, cpu, memory_mb, disk_mb in usage_rows:
        usage[node_id] = NodeUsage(
            Resources(cpu=int(cpu), memory_mb=int(memory_mb), disk_mb=int(disk_mb)),
            frozenset(ports.get(node_id, ())),
            frozenset(cores.get(node_id, ())),
        )
    return usage


class TouchedRow(TypedDict):
    """A row of plan_touched_allocs: an allocation the batch places, stops or evicts."""

    id: uuid.UUID
    node_id: uuid.UUID
    desired_status: AllocDesiredStatus
    client_status: AllocClientStatus
    cpu: int
    memory_mb: int
    disk_mb: int
    host_ports: list[int]
    namespace: str
    job_id: str
    name: str
    reserved_cores: list[int]


def _touched(r: TouchedRow) -> Touched:
    return Touched(
        node_id=r["node_id"],
        live=r["desired_status"] == "run" and r["client_status"] in LIVE_CLIENT,
        resources=Resources(cpu=r["cpu"], memory_mb=r["memory_mb"], disk_mb=r["disk_mb"]),
        ports=frozenset(r["host_ports"]),
        owner=(r["namespace"], r["job_id"], r["name"]),
        cores=frozenset(r["reserved_cores"]),
    )
