"""The plan codec: a plan, its result and placement metrics survive the trip through the stored
JSON exactly, and rows in the format written before the codec was typed still decode."""

from __future__ import annotations

import dataclasses
import json
import uuid
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.pipeline.codecs.metrics_codec import (
    metrics_from_json,
    metrics_to_json,
    placed_from_json,
    placed_text,
    placed_to_json,
    placed_to_nomad,
)
from app.pipeline.codecs.plan_codec import alloc_to_json, decode_plan, decode_result, encode_plan, encode_result
from app.structs import (
    Allocation,
    AllocationStop,
    ClaimedVolume,
    Deployment,
    DeploymentGroup,
    DeploymentStatusUpdate,
    EncodedMetrics,
    NodeScore,
    PlacementMetrics,
    Plan,
    PlanResult,
    Port,
    Resources,
)
from app.wire.plan import AllocJson, PlanResultJson, PlanRowJson
from tests.support.scheduler_harness import pending_alloc

pytestmark = pytest.mark.unit

SETTINGS = settings(max_examples=150, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
JSON_COLUMNS = ("node_update", "node_allocation", "node_preemptions", "deployment", "deployment_updates")

counts = st.integers(min_value=0, max_value=2**53)
names = st.text(max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=4,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=2)
resources = st.builds(Resources, cpu=counts, memory_mb=counts, disk_mb=counts, memory_max_mb=counts)
ports = st.builds(Port, label=names, value=st.integers(0, 65535), to=st.integers(0, 65535), host_network=names)
stops = st.builds(
    AllocationStop,
    alloc_id=st.uuids(),
    desired_status=st.sampled_from(["stop", "evict"]),
    description=names,
    client_status=st.none() | st.sampled_from(["lost", "complete"]),
    preempted_by=st.none() | st.uuids(),
)
groups = st.builds(
    DeploymentGroup,
    auto_revert=st.booleans(),
    auto_promote=st.booleans(),
    progress_deadline_ns=counts,
    require_progress_by_ns=counts,
    promoted=st.booleans(),
    desired_canaries=counts,
    desired_total=counts,
)
deployments = st.builds(
    Deployment,
    id=st.uuids(),
    namespace=names,
    job_id=names,
    job_version=counts,
    job_create_index=counts,
    status=st.sampled_from(["running", "paused", "successful", "failed", "cancelled"]),
    status_description=names,
    groups=st.dictionaries(names, groups, max_size=3),
    job_modify_index=counts,
    job_spec_modify_index=counts,
    eval_priority=st.integers(1, 100),
)
status_updates = st.builds(DeploymentStatusUpdate, deployment_id=st.uuids(), status=names, description=names)
tallies = st.dictionaries(names, counts, max_size=3)
scores = st.floats(allow_nan=False, allow_infinity=False)
node_scores = st.builds(NodeScore, node_id=st.uuids(), norm_score=scores, parts=st.tuples(*[st.none() | scores] * 6))
# A placed allocation's metrics: never coalesced (only a failed group counts further failures).
placed_metrics = st.builds(
    PlacementMetrics,
    nodes_evaluated=counts,
    nodes_filtered=counts,
    nodes_in_pool=counts,
    nodes_available=tallies,
    class_filtered=tallies,
    constraint_filtered=tallies,
    nodes_exhausted=counts,
    class_exhausted=tallies,
    dimension_exhausted=tallies,
    score_meta=st.lists(node_scores, max_size=5).map(tuple),
    allocation_time_ns=counts,
    coalesced_failures=st.just(0),
)


def allocations(node_id: uuid.UUID, namespace: str, job_id: str) -> st.SearchStrategy[Allocation]:
    """Any allocation a plan may carry under `node_id`: fresh placements and in-place updates."""
    return st.builds(
        Allocation,
        id=st.uuids(),
        namespace=st.just(namespace),
        job_id=st.just(job_id),
        job_version=counts,
        task_group=names,
        name=names,
        node_id=st.just(node_id),
        eval_id=st.uuids(),
        desired_status=st.sampled_from(["run", "stop", "evict"]),
        client_status=st.sampled_from(["pending", "running", "complete", "failed", "lost", "unknown"]),
        resources=resources,
        ports=st.lists(ports, max_size=3).map(tuple),
        previous_allocation=st.none() | st.uuids(),
        deployment_id=st.none() | st.uuids(),
        followup_eval_id=st.none() | st.uuids(),
        reschedule_tracker=st.none() | json_objects,
        desired_transition=json_objects,
        node_name=names,
        create_index=counts,
        modify_index=counts,
        preempted_allocations=st.lists(st.uuids(), max_size=3).map(tuple),
        healthy=st.none() | st.booleans(),
        canary=st.booleans(),
        metrics=st.none() | placed_metrics,
        claims=st.lists(st.builds(ClaimedVolume, volume_id=st.uuids(), name=names), max_size=2).map(tuple),
    )


@st.composite
def plans(draw: st.DrawFn) -> tuple[Plan, str, str]:
    namespace, job_id = draw(names), draw(names)
    nodes = draw(st.lists(st.uuids(), max_size=3, unique=True))
    placed = {n: tuple(draw(st.lists(allocations(n, namespace, job_id), max_size=2))) for n in nodes}
    plan = Plan(
        eval_id=draw(st.uuids()),
        priority=draw(st.integers(1, 100)),
        snapshot_index=draw(counts),
        all_at_once=draw(st.booleans()),
        node_update=draw(st.dictionaries(st.uuids(), st.lists(stops, max_size=3).map(tuple), max_size=3)),
        node_allocation={n: allocs for n, allocs in placed.items() if draw(st.booleans())},
        node_preemptions=draw(st.dictionaries(st.uuids(), st.lists(stops, max_size=3).map(tuple), max_size=3)),
        deployment=draw(st.none() | deployments),
        deployment_updates=tuple(draw(st.lists(status_updates, max_size=2))),
    )
    return plan, namespace, job_id


def stored(row: PlanRowJson) -> PlanRowJson:
    """What the applier reads back: the JSON columns have been through jsonb."""
    through = json.loads(json.dumps({k: v for k, v in row.items() if k in JSON_COLUMNS}))
    return cast(PlanRowJson, {**row, **through})


@settings(SETTINGS, max_examples=100)
@given(plans())
def test_a_plan_round_trips_through_its_row_exactly(case: tuple[Plan, str, str]) -> None:
    plan, namespace, job_id = case
    row = encode_plan(plan, namespace, job_id)
    assert (row["namespace"], row["job_id"]) == (namespace, job_id)
    decoded = decode_plan(stored(row))
    assert decoded == as_the_applier_reads(plan)
    for allocs in decoded.node_allocation.values():
        for a in allocs:  # the text carried through expands to the scheduler's metrics exactly
            original = next(o for o in plan.node_allocation[a.node_id] if o.id == a.id)
            if isinstance(a.metrics, EncodedMetrics):
                assert placed_from_json(json.loads(a.metrics)) == original.metrics


def as_the_applier_reads(plan: Plan) -> Plan:
    """`plan` with each placement's metrics as their text: the applier does not decode them."""

    def carried(a: Allocation) -> Allocation:
        return a if a.metrics is None else dataclasses.replace(a, metrics=EncodedMetrics(placed_text(a.metrics)))

    allocations = {node: tuple(carried(a) for a in allocs) for node, allocs in plan.node_allocation.items()}
    return dataclasses.replace(plan, node_allocation=allocations)


def _placed_with_metrics() -> tuple[Plan, Allocation]:
    metrics = PlacementMetrics(nodes_evaluated=2, nodes_in_pool=2, nodes_available={"dc1": 2})
    alloc = pending_alloc(uuid.uuid4(), 100, metrics=metrics)
    return Plan(uuid.uuid4(), 50, 3, node_allocation={alloc.node_id: (alloc,)}), alloc


def test_placement_metrics_travel_beside_the_plans_json_not_inside_it() -> None:
    plan, alloc = _placed_with_metrics()
    row = encode_plan(plan, "default", "web")
    (placed,) = row["node_allocation"][str(alloc.node_id)]
    assert "Metrics" not in placed  # Postgres parses node_allocation as jsonb; the metrics skip that
    assert alloc.metrics is not None
    assert row.get("placement_metrics") == f"{alloc.id} {placed_text(alloc.metrics)}\n"
    (decoded,) = decode_plan(stored(row)).node_allocation[alloc.node_id]
    assert decoded.metrics == EncodedMetrics(placed_text(alloc.metrics))
    assert encode_plan(dataclasses.replace(plan, node_allocation={}), "default", "web").get("placement_metrics") is None


def test_a_plan_of_an_older_worker_still_carries_its_metrics_inline() -> None:
    """During a rolling upgrade the applier may read a plan whose placements hold their metrics."""
    plan, alloc = _placed_with_metrics()
    row = encode_plan(plan, "default", "web")
    older = cast(PlanRowJson, {k: v for k, v in row.items() if k != "placement_metrics"})
    older["node_allocation"] = {str(alloc.node_id): [alloc_to_json(alloc)]}
    (decoded,) = decode_plan(stored(older)).node_allocation[alloc.node_id]
    assert alloc.metrics is not None
    assert decoded.metrics == EncodedMetrics(placed_text(alloc.metrics))


def test_on_the_schema_before_0037_the_metrics_ride_inside_the_plans_json() -> None:
    """A worker that found no placement_metrics column (app.pipeline.metrics_columns) writes the
    plan as the release before did; the applier reads it back alike."""
    plan, alloc = _placed_with_metrics()
    row = encode_plan(plan, "default", "web", text_metrics=False)
    assert "placement_metrics" not in row
    assert alloc.metrics is not None
    (placed,) = row["node_allocation"][str(alloc.node_id)]
    assert placed.get("Metrics") == placed_text(alloc.metrics)
    (decoded,) = decode_plan(stored(row)).node_allocation[alloc.node_id]
    assert decoded.metrics == EncodedMetrics(placed_text(alloc.metrics))


def test_the_applier_writes_a_placements_metrics_text_as_it_came() -> None:
    text = '{"Evaluated": 2, "Filtered": 0, "Exhausted": 0, "InPool": 9, "Available": {}, "Top": [], "Time": 7}'
    assert placed_text(EncodedMetrics(text)) is text


id_lists = st.dictionaries(st.uuids(), st.lists(st.uuids(), max_size=3).map(tuple), max_size=3)


@SETTINGS
@given(
    st.builds(
        PlanResult,
        node_update=id_lists,
        node_allocation=id_lists,
        node_preemptions=id_lists,
        rejected_nodes=st.lists(st.uuids(), max_size=3).map(tuple),
        refresh_index=counts,
        alloc_index=counts,
    )
)
def test_a_plan_result_round_trips_exactly(result: PlanResult) -> None:
    row: PlanResultJson = json.loads(json.dumps(encode_result(result)))
    assert decode_result(row) == result


@SETTINGS
@given(
    st.builds(
        PlacementMetrics,
        nodes_evaluated=counts,
        nodes_filtered=counts,
        nodes_in_pool=counts,
        nodes_available=tallies,
        class_filtered=tallies,
        constraint_filtered=tallies,
        nodes_exhausted=counts,
        class_exhausted=tallies,
        dimension_exhausted=tallies,
        coalesced_failures=counts,
        score_meta=st.lists(node_scores, max_size=5).map(tuple),
        allocation_time_ns=counts,
    )
)
def test_placement_metrics_round_trip_exactly(metrics: PlacementMetrics) -> None:
    assert metrics_from_json(json.loads(json.dumps(metrics_to_json(metrics)))) == metrics


@SETTINGS
@given(placed_metrics)
def test_a_placements_compact_metrics_round_trip_and_expand_to_nomads(metrics: PlacementMetrics) -> None:
    stored = json.loads(json.dumps(placed_to_json(metrics)))
    assert placed_from_json(stored) == metrics
    assert placed_to_nomad(stored) == metrics_to_json(metrics)


def test_placement_metrics_in_nomads_names_and_types() -> None:
    node = uuid.uuid4()
    metrics = PlacementMetrics(
        nodes_evaluated=3,
        nodes_in_pool=4,
        nodes_available={"dc1": 4},
        score_meta=(NodeScore(node, 0.5, (0.75, 0.0, 0.0, 0.25, None, None)),),
        allocation_time_ns=1234,
    )
    out = json.loads(json.dumps(metrics_to_json(metrics)))
    assert set(out) == {
        *("NodesEvaluated", "NodesFiltered", "NodesInPool", "NodesAvailable", "ClassFiltered"),
        *("ConstraintFiltered", "NodesExhausted", "ClassExhausted", "DimensionExhausted", "QuotaExhausted"),
        *("ResourcesExhausted", "Scores", "ScoreMetaData", "AllocationTime", "CoalescedFailures"),
    }
    assert out["ScoreMetaData"] == [
        {
            "NodeID": str(node),
            "NormScore": 0.5,
            "Scores": {
                "binpack": 0.75,
                "job-anti-affinity": 0.0,
                "node-reschedule-penalty": 0.0,
                "node-affinity": 0.25,
            },
        }
    ]
    assert out["AllocationTime"] == 1234 and out["QuotaExhausted"] == [] and out["Scores"] is None


NODE, ALLOC, EVAL = uuid.uuid4(), uuid.uuid4(), uuid.uuid4()
# A placement as rows held it before the codec was typed.
OLD_PLACEMENT: dict[str, Any] = {
    "ID": str(ALLOC),
    "Name": "web.g[0]",
    "JobVersion": 2,
    "TaskGroup": "g",
    "NodeName": "n1",
    "EvalID": str(EVAL),
    "Resources": {"CPU": 100, "MemoryMB": 64, "MemoryMaxMB": 128, "DiskMB": 10},
    "Ports": [{"Label": "http", "Value": 20001, "To": 0, "HostNetwork": "default"}],
    "PreviousAllocation": None,
    "PreemptedAllocations": [],
    "RescheduleTracker": None,
    "DeploymentID": None,
    "Canary": False,
}


def old_row() -> PlanRowJson:
    return {
        "eval_id": EVAL,
        "priority": 50,
        "snapshot_index": 7,
        "all_at_once": False,
        "namespace": "default",
        "job_id": "web",
        "node_update": {},
        "node_allocation": {str(NODE): [cast(AllocJson, OLD_PLACEMENT)]},
        "node_preemptions": {},
        "deployment": None,
        "deployment_updates": [],
    }


def test_rows_in_the_old_format_decode_as_fresh_placements() -> None:
    [alloc] = decode_plan(old_row()).node_allocation[NODE]
    assert alloc == Allocation(
        id=ALLOC,
        namespace="default",
        job_id="web",
        job_version=2,
        task_group="g",
        name="web.g[0]",
        node_id=NODE,
        eval_id=EVAL,
        desired_status="run",
        client_status="pending",
        resources=Resources(cpu=100, memory_mb=64, disk_mb=10, memory_max_mb=128),
        ports=(Port("http", 20001),),
        node_name="n1",
    )


def test_a_fresh_placement_is_written_in_the_old_format() -> None:
    """Rows stay readable by an applier that predates the typed codec: a fresh placement
    carries exactly the keys it always did."""
    [alloc] = decode_plan(old_row()).node_allocation[NODE]
    assert dict(alloc_to_json(alloc)) == OLD_PLACEMENT
