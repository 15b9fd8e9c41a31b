"""Rows that only later pipeline stages write (allocations, plans), inserted directly."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

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
        "state_index_own(), state_index_own(), state_index_own() FROM jobs WHERE id = %s",
        (alloc_id, job_id, eval_id, node_id, job_id, client_status, cpu, job_id),
    )
    return alloc_id


def add_nodes(pg: Conn, n: int, *, cpu: int) -> None:
    """`n` ready nodes of computed class v1:small with the mock driver, `cpu` MHz each."""
    for i in range(n):
        pg.execute(
            "INSERT INTO nodes (id, secret_hash, name, datacenter, node_pool, computed_class, status, "
            "status_updated_at, scheduling_eligibility, drivers, cpu_shares, memory_mb, disk_mb, create_index, "
            "modify_index) VALUES (%s, 'x', %s, 'dc1', 'default', 'v1:small', 'ready', now(), 'eligible', "
            '\'{"mock": {"Healthy": true}}\', %s, 4096, 10000, 1, 1)',
            (uuid.uuid4(), f"n{i:03}", cpu),
        )
    pg.execute("INSERT INTO state_index (name, value) VALUES ('nodes', state_index_own())")


def group_state(**fields: Any) -> Any:  # a stored group state, with whatever keys a test sets
    state = {
        "AutoRevert": False,
        "AutoPromote": False,
        "ProgressDeadline": 0,
        "RequireProgressBy": 0,
        "Promoted": False,
        "DesiredCanaries": 0,
        "DesiredTotal": 2,
    }
    return {**state, **fields}


def insert_deployment(
    pg: Conn,
    *,
    job_id: str = "web",
    status: str = "running",
    groups: dict[str, Any] | None = None,
    create_index: int = 100,
    version: int | None = None,
    description: str = "Deployment is running",
) -> str:
    deployment_id = str(uuid.uuid4())
    pg.execute(
        "INSERT INTO deployments (id, namespace, job_id, job_version, job_modify_index, job_spec_modify_index, "
        "job_create_index, status, status_description, task_groups, eval_priority, create_index, modify_index) "
        "SELECT %s, namespace, id, coalesce(%s, version), job_modify_index, job_modify_index, create_index, %s, %s, "
        "%s, 50, %s, %s FROM jobs WHERE id = %s",
        (
            deployment_id,
            version,
            status,
            description,
            json.dumps(groups if groups is not None else {"g": group_state()}),
            create_index,
            create_index,
            job_id,
        ),
    )
    return deployment_id


def deployed_alloc(
    pg: Conn,
    node: str,
    eval_id: str,
    deployment_id: str,
    *,
    healthy: bool | None = None,
    canary: bool = False,
    job_id: str = "web",
) -> str:
    alloc = insert_allocation(pg, node, eval_id, job_id=job_id)
    status = {"Healthy": healthy, "Canary": canary, "Timestamp": None, "ModifyIndex": 0}
    pg.execute(
        "UPDATE allocations SET deployment_id = %s, deployment_status = %s WHERE id = %s",
        (deployment_id, json.dumps(status), alloc),
    )
    return alloc


def pairs(rows: Iterable[Sequence[object]]) -> dict[object, object]:
    """Two-column rows as a mapping of the first column to the second."""
    return {row[0]: row[1] for row in rows}


def scalar(pg: Conn, sql: str, params: Sequence[object] = ()) -> object:
    """The first column of the one row SQL returns (the test fails if it returns none)."""
    row = pg.execute(sql, params).fetchone()
    assert row is not None, sql
    return row[0]
