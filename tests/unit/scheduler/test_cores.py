"""`resources { cores = N }`: whole cores reserved by the scheduler (Nomad's ReservedCores)."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from app.pipeline.codecs.plan_codec import alloc_from_json, alloc_to_json
from app.pipeline.snapshot_rows import allocation_from_row
from app.scheduler.cores import pick_cores
from app.scheduler.fit import CORES, exhausted_dimension
from app.scheduler.updates import destructive
from app.structs import Job, NodeUsage, Resources, Task, TaskCores
from tests.support.scheduler_harness import apply, group, job, node, placed, run, snapshot, task

pytestmark = pytest.mark.unit


def cores_task(name: str = "t", cores: int = 2) -> Task:
    return dataclasses.replace(task(name, cpu=0), cores=cores)


def cores_job(cores: int = 2, count: int = 1, job_id: str = "web") -> Job:
    return job(job_id, groups=[group(count=count, tasks=[dataclasses.replace(task(cpu=0), cores=cores)])])


FOUR_CORES = {"cpu.numcores": "4"}


def test_a_cores_ask_takes_the_lowest_free_cores_and_their_cpu() -> None:
    n = node("n1", cpu=4000, attrs=FOUR_CORES)
    result = run(snapshot(cores_job(2), [n]))
    (alloc,) = placed(result)
    assert alloc.task_cores == (TaskCores("t", (0, 1), 2000),)
    assert alloc.resources.cpu == 2000  # 2 cores x 1000 MHz per core
    assert alloc.reserved_cores == frozenset({0, 1})


def test_two_allocations_never_share_a_core() -> None:
    n = node("n1", cpu=4000, attrs=FOUR_CORES)
    allocs = placed(run(snapshot(cores_job(2, count=2), [n])))
    assert sorted(a.task_cores[0].cores for a in allocs) == [(0, 1), (2, 3)]


def test_a_node_without_enough_free_cores_is_not_chosen() -> None:
    busy, free = (
        node("busy", cpu=20000, attrs={"cpu.numcores": "2"}),
        node("free", cpu=2000, attrs={"cpu.numcores": "2"}),
    )
    first = snapshot(cores_job(2, job_id="first"), [busy])
    taken = apply(first, run(first))
    # `busy` has ten times the CPU left, but its two cores are taken.
    second = dataclasses.replace(snapshot(cores_job(1, job_id="second"), [busy, free]), usage=taken.usage)
    (alloc,) = placed(run(second))
    assert alloc.node_id == free.id and alloc.task_cores[0].cores == (0,)


def test_too_few_cores_anywhere_fails_the_group_on_the_cores_dimension() -> None:
    result = run(snapshot(cores_job(4), [node("n1", attrs={"cpu.numcores": "2"})]))
    assert not placed(result)
    assert result.failed_tg_allocs["g"].dimension_exhausted == {CORES: 1}


def test_reservable_cores_reported_by_the_node_are_the_ones_handed_out() -> None:
    n = dataclasses.replace(node("n1", cpu=4000, attrs=FOUR_CORES), reservable_cores=(3, 2))
    (alloc,) = placed(run(snapshot(cores_job(2), [n])))
    assert alloc.task_cores[0].cores == (2, 3)


def test_pick_cores_per_task_and_none_when_short() -> None:
    n = node("n1", cpu=4000, attrs=FOUR_CORES)
    used = NodeUsage(cores=frozenset({0}))
    assert pick_cores(n, used, (("a", 1), ("b", 2))) == (TaskCores("a", (1,), 1000), TaskCores("b", (2, 3), 2000))
    assert pick_cores(n, used, (("a", 4),)) is None
    assert pick_cores(n, used, ()) == ()


def test_the_fit_check_refuses_a_core_held_by_another_allocation() -> None:
    n = node("n1", cpu=4000, attrs=FOUR_CORES)
    used = NodeUsage(Resources(cpu=1000), cores=frozenset({1}))
    assert exhausted_dimension(n, used, Resources(cpu=1000), (), (1,)) == CORES
    assert exhausted_dimension(n, used, Resources(cpu=1000), (), (2, 2)) == CORES
    assert exhausted_dimension(n, used, Resources(cpu=1000), (), (2,)) is None


def test_changing_cores_is_a_destructive_update() -> None:
    old = group(tasks=[cores_task(cores=1)])
    assert destructive(old, group(tasks=[cores_task(cores=2)]))
    assert not destructive(old, group(tasks=[cores_task(cores=1)]))


def test_the_cores_travel_through_the_plan_wire_and_the_row() -> None:
    alloc = placed(run(snapshot(cores_job(2), [node("n1", cpu=4000, attrs=FOUR_CORES)])))[0]
    wire = alloc_to_json(alloc)
    assert wire["Tasks"] == {"t": {"Cpu": {"CpuShares": 2000, "ReservedCores": [0, 1]}}}
    assert alloc_from_json(wire, alloc.node_id, alloc.namespace, alloc.job_id).task_cores == alloc.task_cores
    row = {
        "id": uuid.uuid4(),
        "namespace": "default",
        "job_id": "web",
        "job_version": 0,
        "task_group": "g",
        "name": "web.g[0]",
        "node_id": alloc.node_id,
        "node_name": "n1",
        "eval_id": uuid.uuid4(),
        "desired_status": "run",
        "client_status": "running",
        "cpu": 2000,
        "memory_mb": 128,
        "disk_mb": 0,
        "memory_max_mb": 128,
        "allocated_resources": {"Shared": {"DiskMB": 0, "Ports": []}, "Tasks": wire["Tasks"]},
        "previous_allocation": None,
        "deployment_id": None,
        "followup_eval_id": None,
        "reschedule_tracker": None,
        "desired_transition": {},
        "create_index": 1,
        "modify_index": 1,
    }
    assert allocation_from_row(row).task_cores == alloc.task_cores
