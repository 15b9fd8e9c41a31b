"""The applier's nodes, built from their rows once and reused while the row is unchanged."""

from __future__ import annotations

import uuid

import pytest

from app.pipeline.plan_apply import plan_state

pytestmark = pytest.mark.unit


def row(node_id: uuid.UUID, drain: bool = False, reserved_ports: str | None = "22") -> tuple[object, ...]:
    return (node_id, "v1:abc", "ready", "eligible", drain, 4000, 8192, 100_000, 100, 256, 0, reserved_ports)


def test_an_unchanged_row_gives_the_node_built_before() -> None:
    node_id = uuid.uuid4()
    first = plan_state._node(row(node_id))
    assert plan_state._node(row(node_id)) is first
    assert first.id == node_id and first.capacity.cpu == 4000 and first.reserved.memory_mb == 256
    assert 22 in first.reserved_ports and not first.draining


def test_a_changed_row_gives_a_node_as_it_now_stands() -> None:
    node_id = uuid.uuid4()
    before = plan_state._node(row(node_id))
    drained = plan_state._node(row(node_id, drain=True, reserved_ports=None))
    assert drained is not before and drained.draining and not drained.reserved_ports


def test_the_cache_is_emptied_when_it_reaches_its_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(plan_state, "NODE_CACHE_ROWS", 3)
    plan_state._nodes_by_row.clear()
    for _ in range(3):
        plan_state._node(row(uuid.uuid4()))
    assert len(plan_state._nodes_by_row) == 3
    plan_state._node(row(uuid.uuid4()))
    assert len(plan_state._nodes_by_row) == 1
