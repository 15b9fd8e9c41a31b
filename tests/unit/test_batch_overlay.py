"""The room a batch's earlier plans take, laid over the snapshot of a later pass (pure)."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from app.jobspec import normalize_job
from app.pipeline.batch_overlay import combine, taken_by, with_taken
from app.scheduler import process
from app.structs import (
    Allocation,
    Evaluation,
    Job,
    Node,
    NodeSet,
    NodeUsage,
    Plan,
    Port,
    Resources,
    SchedulerConfiguration,
    Snapshot,
)

pytestmark = pytest.mark.unit
NODE = uuid.UUID(int=1)


def allocation(job_id: str, cpu: int, ports: tuple[Port, ...] = ()) -> Allocation:
    return Allocation(
        id=uuid.uuid4(),
        namespace="default",
        job_id=job_id,
        job_version=0,
        task_group="g",
        name=f"{job_id}.g[0]",
        node_id=NODE,
        eval_id=uuid.uuid4(),
        desired_status="run",
        client_status="pending",
        resources=Resources(cpu=cpu, memory_mb=64, disk_mb=10),
        ports=ports,
    )


def node(cpu: int) -> Node:
    return Node(
        id=NODE,
        name="n1",
        datacenter="dc1",
        node_class="",
        node_pool="default",
        computed_class="v1:1",
        status="ready",
        eligibility="eligible",
        draining=False,
        capacity=Resources(cpu=cpu, memory_mb=4096, disk_mb=10000),
        reserved=Resources(),
        attributes={},
        meta={},
        healthy_drivers=frozenset({"mock"}),
        reserved_ports=frozenset(),
    )


def batch_job(job_id: str, cpu: int) -> Job:
    task = {"Name": "t", "Driver": "mock", "Resources": {"CPU": cpu, "MemoryMB": 32}}
    spec = {
        "ID": job_id,
        "Name": job_id,
        "Namespace": "default",
        "Type": "batch",
        "Priority": 50,
        "Datacenters": ["dc1"],
        "TaskGroups": [{"Name": "g", "Count": 1, "Tasks": [task]}],
    }
    return Job.from_spec(normalize_job(spec), version=0, job_modify_index=1, create_index=1)


def snapshot(job: Job, *, cpu: int = 1000, existing: tuple[Allocation, ...] = ()) -> Snapshot:
    return Snapshot(
        index=5,
        job=job,
        nodes=NodeSet([node(cpu)]),
        allocations=existing,
        usage={},
        job_versions={},
        config=SchedulerConfiguration(),
        preemptible={},
        deployment=None,
    )


def evaluation(job_id: str) -> Evaluation:
    return Evaluation(
        id=uuid.uuid4(),
        namespace="default",
        job_id=job_id,
        type="batch",
        priority=50,
        triggered_by="job-register",
        job_modify_index=1,
    )


def test_only_a_plans_new_allocations_take_room() -> None:
    kept = allocation("web", cpu=300)  # in the snapshot already: an in-place update of it takes nothing more
    fresh = allocation("web", cpu=200, ports=(Port("http", 8080),))
    plan = Plan(eval_id=uuid.uuid4(), priority=50, snapshot_index=5, node_allocation={NODE: (kept, fresh)})
    taken = taken_by(plan, snapshot(batch_job("web", 100), existing=(kept,)))
    assert taken == {NODE: NodeUsage(Resources(cpu=200, memory_mb=64, disk_mb=10), frozenset({8080}))}


def test_taken_room_adds_up_and_is_charged_on_top_of_the_snapshot() -> None:
    a = {NODE: NodeUsage(Resources(cpu=200), frozenset({80}))}
    b = {NODE: NodeUsage(Resources(cpu=300), frozenset({443})), uuid.UUID(int=2): NodeUsage(Resources(cpu=1))}
    both = combine(a, b)
    assert both[NODE] == NodeUsage(Resources(cpu=500), frozenset({80, 443}))
    assert both[uuid.UUID(int=2)] == NodeUsage(Resources(cpu=1))
    read = dataclasses.replace(snapshot(batch_job("web", 100)), usage={NODE: NodeUsage(Resources(cpu=100))})
    laid = with_taken(read, both)
    assert laid.usage[NODE] == NodeUsage(Resources(cpu=600), frozenset({80, 443}))
    assert read.usage[NODE] == NodeUsage(Resources(cpu=100))  # the shared read is left as it was
    assert with_taken(read, {}) is read


def test_a_later_pass_of_the_batch_does_not_place_on_room_an_earlier_plan_took() -> None:
    first, second = batch_job("first", 800), batch_job("second", 800)
    read = snapshot(first)
    placed = process(evaluation("first"), read, now_ns=1).plan
    assert sum(len(a) for a in placed.node_allocation.values()) == 1
    later = evaluation("second")
    alone = process(later, dataclasses.replace(read, job=second), now_ns=1)
    assert alone.plan.node_allocation, "on its own the node has room for the second job"
    laid = with_taken(dataclasses.replace(read, job=second), taken_by(placed, read))
    result = process(later, laid, now_ns=1)
    assert not result.plan.node_allocation
    assert set(result.failed_tg_allocs) == {"g"}
