"""Rows that only later pipeline stages write (allocations, plans), inserted directly."""

from __future__ import annotations

import uuid

import psycopg

Conn = psycopg.Connection[tuple[object, ...]]


def insert_node(pg: Conn, *, cpu: int = 4000, memory: int = 8192, name: str = "n1") -> str:
    node_id = str(uuid.uuid4())
    pg.execute(
        "INSERT INTO nodes (id, secret_hash, name, datacenter, node_pool, computed_class, status, "
        "status_updated_at, scheduling_eligibility, cpu_shares, memory_mb, disk_mb, create_index, modify_index) "
        "VALUES (%s, 'x', %s, 'dc1', 'default', 'v1:1', 'ready', now(), 'eligible', %s, %s, 10000, 1, 1)",
        (node_id, name, cpu, memory),
    )
    return node_id


def insert_allocation(
    pg: Conn, node_id: str, eval_id: str, *, client_status: str = "running", job_id: str = "web", cpu: int = 500
) -> str:
    alloc_id = str(uuid.uuid4())
    pg.execute(
        "INSERT INTO allocations (id, namespace, job_id, job_version, eval_id, node_id, node_name, task_group, "
        "name, desired_status, client_status, cpu, memory_mb, memory_max_mb, disk_mb, create_index, "
        "modify_index, alloc_modify_index) "
        "SELECT %s, 'default', %s, version, %s, %s, 'n1', 'g', %s || '.g[0]', 'run', %s, %s, 256, 256, 300, "
        "1000, 1000, 1000 FROM jobs WHERE id = %s",
        (alloc_id, job_id, eval_id, node_id, job_id, client_status, cpu, job_id),
    )
    return alloc_id
