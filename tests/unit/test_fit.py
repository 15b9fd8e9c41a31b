"""The shared fit function."""

from __future__ import annotations

import pytest

from app.scheduler.fit import CPU, DISK, MEMORY, PORTS, add_usage, exhausted_dimension, remove_usage
from app.structs import NodeUsage, Resources
from tests.support.scheduler_harness import node

pytestmark = pytest.mark.unit

NODE = node("n", cpu=1000, mem=1000, disk=1000, reserved=Resources(cpu=100), reserved_ports=(22,))


@pytest.mark.parametrize(
    ("ask", "ports", "usage", "expected"),
    [
        (Resources(cpu=900, memory_mb=1000, disk_mb=1000), (), NodeUsage(), None),
        (Resources(cpu=901), (), NodeUsage(), CPU),
        (Resources(memory_mb=600), (), NodeUsage(Resources(memory_mb=500)), MEMORY),
        (Resources(disk_mb=1001), (), NodeUsage(), DISK),
        (Resources(), (22,), NodeUsage(), PORTS),
        (Resources(), (8080,), NodeUsage(ports=frozenset({8080})), PORTS),
        (Resources(), (8080, 8080), NodeUsage(), PORTS),
        (Resources(), (8080, 0), NodeUsage(), None),
    ],
)
def test_exhausted_dimension(ask: Resources, ports: tuple[int, ...], usage: NodeUsage, expected: str | None) -> None:
    assert exhausted_dimension(NODE, usage, ask, ports) == expected


def test_usage_arithmetic_round_trips() -> None:
    used = add_usage(NodeUsage(), Resources(cpu=10, memory_mb=20), (8080,))
    assert used == NodeUsage(Resources(cpu=10, memory_mb=20), frozenset({8080}))
    assert remove_usage(used, Resources(cpu=10, memory_mb=20), (8080,)) == NodeUsage()
