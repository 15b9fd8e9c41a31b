"""`alloc status -verbose` prints the allocation's placement metrics in Nomad's layout: the counts
in its key-value block, then "Placement Metrics" with the filter and exhaustion lines and the
best nodes' scores by scorer (formatAllocMetrics); without -verbose, none of it."""

from __future__ import annotations

from typing import Any

import pytest

from app.cli.allocs.alloc import render_alloc
from app.cli.allocs.alloc_metrics import go_duration

pytestmark = pytest.mark.unit

BEST, NEXT = "2f6b0c1e-0000-4000-8000-000000000001", "9a1d4e22-0000-4000-8000-000000000002"
METRICS: Any = {
    "NodesEvaluated": 4,
    "NodesFiltered": 1,
    "NodesInPool": 4,
    "NodesAvailable": {"dc1": 4, "dc2": 0},
    "ClassFiltered": {},
    "ConstraintFiltered": {"${attr.kernel.name} = linux": 1},
    "NodesExhausted": 1,
    "ClassExhausted": {},
    "DimensionExhausted": {"memory": 1},
    "QuotaExhausted": [],
    "ResourcesExhausted": {},
    "Scores": None,
    "ScoreMetaData": [
        {
            "NodeID": BEST,
            "NormScore": 0.6172839506,
            "Scores": {"binpack": 0.2345679, "job-anti-affinity": 0.0, "node-reschedule-penalty": 0.0,
                       "node-affinity": 1.0},
        },
        {
            "NodeID": NEXT,
            "NormScore": 0.11,
            "Scores": {"binpack": 0.22, "job-anti-affinity": 0.0, "node-reschedule-penalty": 0.0,
                       "node-affinity": 0.0},
        },
    ],
    "AllocationTime": 164687,
    "CoalescedFailures": 0,
}  # fmt: skip
ALLOC: Any = {"ID": "a" * 36, "Name": "web.g[0]", "NodeID": BEST, "Metrics": METRICS}


def test_verbose_status_shows_the_placement_metrics_as_nomad() -> None:
    out = render_alloc(ALLOC, verbose=True).splitlines()
    assert [line for line in out if line.split("=")[0].strip() in {"Evaluated Nodes", "Allocation Time"}] == [
        "Evaluated Nodes     = 4",
        "Allocation Time     = 164.687µs",
    ]
    assert "Failures            = 0" in out and "Exhausted Nodes     = 1" in out
    at = out.index("Placement Metrics")
    assert out[at - 1] == "" and out[at + 1 :] == [
        '  * No nodes are available in datacenter "dc2"',
        '  * Constraint "${attr.kernel.name} = linux": 1 nodes excluded by filter',
        "  * Resources exhausted on 1 nodes",
        '  * Dimension "memory" exhausted on 1 nodes',
        "Node                                  binpack  job-anti-affinity  "
        "node-affinity  node-reschedule-penalty  final score",
        f"{BEST}  0.235    0                  1              0                        0.617",
        f"{NEXT}  0.22     0                  0              0                        0.11",
    ]  # fmt: skip


def test_without_verbose_or_metrics_there_is_no_section() -> None:
    assert "Placement Metrics" not in render_alloc(ALLOC, verbose=False)
    assert "Evaluated Nodes" not in render_alloc(ALLOC, verbose=False)
    without: Any = {**ALLOC, "Metrics": None}
    bare = render_alloc(without, verbose=True)
    assert "Placement Metrics" not in bare and "Evaluated Nodes" not in bare


def test_durations_read_as_gos() -> None:
    assert [go_duration(n) for n in (0, 850, 1500, 164_687, 2_000_000, 1_500_000_000, 123 * 10**9, 3_600 * 10**9)] == [
        "0s", "850ns", "1.5µs", "164.687µs", "2ms", "1.5s", "2m3s", "1h0m0s",
    ]  # fmt: skip
