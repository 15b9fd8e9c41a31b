"""The worker's snapshot loader hands every evaluation the same NodeSet, in canonical order,
until the nodes table changes: the nodes are read, sorted and indexed once per change."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from sqlalchemy import Engine

from app.pipeline.snapshot import SnapshotLoader
from app.structs import Evaluation, NodeSet, Snapshot
from tests.support.rows import add_nodes

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def evaluation() -> Evaluation:
    # No job needed: the nodes are read whatever the evaluation's job is.
    return Evaluation(uuid.uuid4(), "default", "absent", "service", 50, "job-register", 1)


def assert_canonical(snapshot: Snapshot, pg: Conn) -> None:
    assert isinstance(snapshot.nodes, NodeSet)
    ids = [n.id for n in snapshot.nodes]
    assert ids == sorted(ids, key=lambda i: i.int)
    assert ids == [row[0] for row in pg.execute("SELECT id FROM nodes ORDER BY id")]  # Postgres's uuid order
    assert dict(snapshot.node_set.by_id) == {n.id: n for n in snapshot.nodes}


def test_nodes_are_canonical_and_reused_until_the_nodes_change(engine: Engine, pg: Conn) -> None:
    add_nodes(pg, 40, cpu=1000)
    loader = SnapshotLoader(engine)
    first, second = loader.load(evaluation()), loader.load(evaluation())
    assert_canonical(first, pg)
    assert second.nodes is first.nodes and second.node_set.by_id is first.node_set.by_id
    add_nodes(pg, 1, cpu=1000)  # moves the 'nodes' state index
    third = loader.load(evaluation())
    assert third.nodes is not first.nodes and len(third.nodes) == 41
    assert_canonical(third, pg)
    assert loader.load(evaluation()).nodes is third.nodes
