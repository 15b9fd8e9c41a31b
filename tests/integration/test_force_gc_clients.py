"""A forced server GC (`PUT /v1/system/gc`) also reaches the clients: every live node is asked,
in the transaction that queues the force-gc evaluation, to destroy its terminal allocations."""

from __future__ import annotations

import pytest
from flask.testing import FlaskClient
from psycopg import Connection

from tests.support.api import json_body
from tests.support.pipeline import core_worker
from tests.support.rows import insert_node, pairs

pytestmark = pytest.mark.integration

Conn = Connection[tuple[object, ...]]


def test_forced_gc_stamps_every_live_node_for_client_gc(client: FlaskClient, database_url: str, pg: Conn) -> None:
    ready, down = insert_node(pg, name="ready"), insert_node(pg, name="gone")
    pg.execute("UPDATE nodes SET status = 'down' WHERE id = %s", (down,))
    with core_worker(database_url):
        response = client.put("/v1/system/gc")
    assert response.status_code == 200, response.json
    stamps = pairs(pg.execute("SELECT id::text, gc_force_index FROM nodes").fetchall())
    queued = pg.execute(
        "SELECT create_index FROM evaluations WHERE id = %s", (json_body(response)["EvalID"],)
    ).fetchone()
    assert queued is not None and isinstance(queued[0], int)
    assert stamps[ready] == queued[0] > 0  # same transaction, same index as the evaluation
    assert down not in stamps  # a down node has no client to ask; the forced GC removed it
