"""What a batch of plans is checked against, read once for the whole batch inside the applier's
transaction: the nodes the plans touch, their usage (kept by the allocation triggers) and host
ports, and the allocations the plans place, stop or evict."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Sequence
from typing import Any, cast

import psycopg
from psycopg.rows import dict_row
from sqlalchemy import RowMapping

from app.pipeline.plan_check import BatchState, Touched, plan_alloc_ids, plan_nodes
from app.pipeline.snapshot import node_from_row
from app.store.sql import psycopg_query
from app.structs import NodeUsage, Plan, Resources

LIVE_CLIENT = ("pending", "running", "unknown")


def load_state(pg: psycopg.Connection[Any], plans: Sequence[Plan]) -> BatchState:
    node_ids = list({n for plan in plans for n in plan_nodes(plan)})
    alloc_ids = list({a for plan in plans for a in plan_alloc_ids(plan)})
    cur = pg.cursor(row_factory=dict_row)
    nodes = {
        r["id"]: node_from_row(cast(RowMapping, r))
        for r in cur.execute(psycopg_query("plan_nodes"), {"ids": node_ids}, prepare=True)
    }
    return BatchState(nodes=nodes, usage=_usage(pg, node_ids), touched=_touched(pg, alloc_ids))


def _usage(pg: psycopg.Connection[Any], node_ids: list[uuid.UUID]) -> dict[uuid.UUID, NodeUsage]:
    ports: dict[uuid.UUID, set[int]] = defaultdict(set)
    for node_id, host_ports in pg.execute(psycopg_query("plan_node_ports"), {"ids": node_ids}, prepare=True):
        ports[node_id].update(host_ports)
    usage = {n: NodeUsage(ports=frozenset(p)) for n, p in ports.items()}
    rows = pg.execute(psycopg_query("plan_node_usage"), {"ids": node_ids}, prepare=True)
    for node_id, cpu, memory_mb, disk_mb in rows:
        usage[node_id] = NodeUsage(
            Resources(cpu=int(cpu), memory_mb=int(memory_mb), disk_mb=int(disk_mb)), frozenset(ports.get(node_id, ()))
        )
    return usage


def _touched(pg: psycopg.Connection[Any], ids: list[uuid.UUID]) -> dict[uuid.UUID, Touched]:
    if not ids:
        return {}
    rows = pg.cursor(row_factory=dict_row).execute(psycopg_query("plan_touched_allocs"), {"ids": ids}, prepare=True)
    return {
        r["id"]: Touched(
            node_id=r["node_id"],
            live=r["desired_status"] == "run" and r["client_status"] in LIVE_CLIENT,
            resources=Resources(cpu=r["cpu"], memory_mb=r["memory_mb"], disk_mb=r["disk_mb"]),
            ports=frozenset(r["host_ports"]),
        )
        for r in rows
    }
