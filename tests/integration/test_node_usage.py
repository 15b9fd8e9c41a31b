"""node_usage follows live allocations through every kind of write, and refuses overcommit."""

from __future__ import annotations

import psycopg
import pytest
from flask.testing import FlaskClient

from tests.support.api import json_body, minimal_job
from tests.support.rows import insert_allocation, insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def usage(pg: Conn, node_id: str) -> tuple[object, ...] | None:
    return pg.execute("SELECT cpu, memory_mb, live_allocs FROM node_usage WHERE node_id = %s", (node_id,)).fetchone()


def test_usage_tracks_inserts_updates_and_deletes(client: FlaskClient, pg: Conn) -> None:
    eval_id = json_body(client.put("/v1/jobs", json={"Job": minimal_job()}))["EvalID"]
    node = insert_node(pg, cpu=2000)
    first = insert_allocation(pg, node, eval_id, cpu=500)
    second = insert_allocation(pg, node, eval_id, cpu=700)
    assert usage(pg, node) == (1200, 512, 2)
    pg.execute("UPDATE allocations SET desired_status = 'stop' WHERE id = %s", (first,))
    assert usage(pg, node) == (700, 256, 1)
    pg.execute("UPDATE allocations SET cpu = 800 WHERE id = %s", (second,))
    assert usage(pg, node) == (800, 256, 1)
    pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (second,))
    assert usage(pg, node) == (0, 0, 0)
    pg.execute("DELETE FROM allocations")
    assert usage(pg, node) == (0, 0, 0)
    matches_view = pg.execute(
        "SELECT bool_and(v.cpu_used = u.cpu) FROM v_node_usage v JOIN node_usage u ON u.node_id = v.id"
    ).fetchone()
    assert matches_view == (True,)


def test_the_database_refuses_an_overcommit(client: FlaskClient, pg: Conn) -> None:
    eval_id = json_body(client.put("/v1/jobs", json={"Job": minimal_job()}))["EvalID"]
    node = insert_node(pg, cpu=1000)
    insert_allocation(pg, node, eval_id, cpu=900)
    with pytest.raises(psycopg.errors.CheckViolation, match="overcommit"):
        insert_allocation(pg, node, eval_id, cpu=200)
    assert usage(pg, node) == (900, 256, 1)
    pg.execute("UPDATE nodes SET cpu_shares = 500 WHERE id = %s", (node,))
    # Shrinking usage on a node that lost capacity is always allowed.
    pg.execute("UPDATE allocations SET desired_status = 'stop'")
    assert usage(pg, node) == (0, 0, 0)
