"""The applier's hand-written COPY rows (text format): escapes, NULLs, arrays and JSON, in the
column order of COPY_COLUMNS minus the five the writing transaction appends."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

import pytest

from app.pipeline.codecs.metrics_codec import placed_to_json
from app.pipeline.plan_apply.plan_check import Verdict, placement
from app.pipeline.plan_apply.plan_writes import (
    COPY_COLUMNS,
    COPY_COLUMNS_BEFORE_0037,
    RESULT_COLUMNS,
    copy_row,
    result_columns,
)
from app.structs import Allocation, AllocationStop, NodeScore, PlacementMetrics, Port, Resources
from tests.support.scheduler_harness import pending_alloc

pytestmark = pytest.mark.unit


def allocation(**overrides: Any) -> Allocation:
    burst = Resources(cpu=100, memory_mb=64, disk_mb=10, memory_max_mb=128)
    return pending_alloc(uuid.uuid4(), 100, **{"job_version": 3, "node_name": "n1", "resources": burst, **overrides})


def fields(row: str) -> list[str]:
    values = row.split("\t")
    assert len(values) == len(COPY_COLUMNS) - 5  # the index and time columns are the writer's
    return values


def test_a_plain_allocation_is_one_line_of_tab_separated_values_with_nulls() -> None:
    alloc = allocation()
    values = dict(zip(COPY_COLUMNS, fields(copy_row(placement(alloc))), strict=False))
    assert values["id"] == str(alloc.id) and values["job_version"] == "3"
    assert values["cpu"] == "100" and values["memory_max_mb"] == "128"
    assert values["host_ports"] == "{}" and values["preempted_allocations"] == "{}"
    assert values["previous_allocation"] == values["deployment_id"] == values["reschedule_tracker"] == "\\N"
    assert values["deployment_status"] == "\\N"
    assert json.loads(values["allocated_resources"]) == {"Shared": {"DiskMB": 10, "Ports": []}}


def test_delimiters_and_backslashes_inside_values_are_escaped() -> None:
    row = copy_row(placement(allocation(name="a\tb\nc\rd\\e", node_name="\\N")))
    assert "\n" not in row and "\r" not in row
    values = dict(zip(COPY_COLUMNS, fields(row), strict=False))
    assert values["name"] == "a\\tb\\nc\\rd\\\\e"
    assert values["node_name"] == "\\\\N"  # the text \N, not NULL


def test_ports_canaries_and_links_are_written() -> None:
    previous, victim = uuid.uuid4(), uuid.uuid4()
    alloc = allocation(
        ports=(Port("http", 8080, 80, "lan\\1"),),
        previous_allocation=previous,
        preempted_allocations=(victim,),
        canary=True,
    )
    values = dict(zip(COPY_COLUMNS, fields(copy_row(placement(alloc))), strict=False))
    assert values["host_ports"] == "{8080}" and values["preempted_allocations"] == f"{{{victim}}}"
    assert values["previous_allocation"] == str(previous) and values["deployment_status"] == '{"Canary": true}'
    shared = json.loads(values["allocated_resources"].replace("\\\\", "\\"))
    assert shared["Shared"]["Ports"][0]["HostNetwork"] == "lan\\1"


def test_a_verdicts_result_columns_hold_its_ids_by_node() -> None:
    placed, node, stopped_on, rejected = (
        [allocation(), allocation(), allocation()],
        uuid.uuid4(),
        uuid.uuid4(),
        uuid.uuid4(),
    )
    stop = AllocationStop(uuid.uuid4(), "stop", "no longer needed")
    accepted = {node: [placement(placed[0]), placement(placed[1])], stopped_on: [placement(placed[2])]}
    verdict = Verdict(accepted=accepted, stops={stopped_on: [stop]}, rejected=[rejected])
    values = dict(zip(RESULT_COLUMNS, result_columns(verdict).split("\t"), strict=False))
    assert len(result_columns(verdict).split("\t")) == 4  # plan id, term, indexes and completion are the writer's
    assert json.loads(values["node_allocation"]) == {
        str(node): [str(placed[0].id), str(placed[1].id)],
        str(stopped_on): [str(placed[2].id)],
    }
    assert json.loads(values["node_update"]) == {str(stopped_on): [str(stop.alloc_id)]}
    assert json.loads(values["node_preemptions"]) == {}
    assert values["rejected_nodes"] == f"{{{rejected}}}"


def test_a_resources_value_the_fast_path_does_not_know_still_encodes() -> None:
    # Deliberately outside the type: a value the fast path was never written for.
    odd = Resources(cpu=100, memory_mb=64, disk_mb=None, memory_max_mb=128)  # type: ignore[arg-type]
    values = dict(zip(COPY_COLUMNS, fields(copy_row(placement(allocation(resources=odd)))), strict=False))
    assert json.loads(values["allocated_resources"]) == {"Shared": {"DiskMB": None, "Ports": []}}
    assert values["disk_mb"] == "\\N"  # which the NOT NULL column refuses: the plan is refused, nothing crashes


_COPY_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "\\": "\\"}


@pytest.mark.parametrize("filtered", [{}, {'say "hi"\t\\': 2}])
def test_the_metrics_column_is_the_compact_json_written_by_hand_or_by_json_dumps(filtered: dict[str, int]) -> None:
    """The common case (nothing filtered) is formatted by hand; both forms must read back alike,
    text that needs escaping (a datacenter's or a constraint's) included."""
    metrics = PlacementMetrics(
        nodes_evaluated=2,
        nodes_in_pool=2,
        nodes_available={'dc "1"\t': 2},
        constraint_filtered=filtered,
        score_meta=(NodeScore(uuid.uuid4(), 0.1 / 3, (0.1, -0.5, 0.0, 0.0, None, None)),),
        allocation_time_ns=99,
    )
    values = dict(zip(COPY_COLUMNS, fields(copy_row(placement(allocation(metrics=metrics)))), strict=False))
    text = re.sub(r"\\(.)", lambda m: _COPY_ESCAPES[m.group(1)], values["placement_metrics"])  # COPY's escapes undone
    assert json.loads(text) == json.loads(json.dumps(placed_to_json(metrics)))
    unrecorded = dict(zip(COPY_COLUMNS, fields(copy_row(placement(allocation()))), strict=False))
    assert unrecorded["placement_metrics"] == "\\N"  # NULL: the jsonb column of older rows keeps its default


def test_on_the_schema_before_0037_the_metrics_go_to_the_jsonb_column() -> None:
    """The same text in the column the schema has; an allocation without metrics gets the jsonb
    column's '{}' (NOT NULL there), not NULL."""
    metrics = PlacementMetrics(nodes_evaluated=2, nodes_in_pool=2, nodes_available={"dc1": 2})
    placed = placement(allocation(metrics=metrics))
    assert copy_row(placed, text_metrics=False) == copy_row(placed)
    unrecorded = fields(copy_row(placement(allocation()), text_metrics=False))
    assert dict(zip(COPY_COLUMNS, unrecorded, strict=False))["placement_metrics"] == "{}"
    assert "metrics" in COPY_COLUMNS_BEFORE_0037 and "placement_metrics" not in COPY_COLUMNS_BEFORE_0037
