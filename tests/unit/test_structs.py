"""Scheduler dataclasses built from normalized job specs."""

from __future__ import annotations

import dataclasses
import uuid

import pytest

from app.jobspec import normalize_job
from app.structs import Allocation, Job, Resources
from app.wire.allocation import AllocClientStatus, AllocDesiredStatus
from app.wire.job import JobSpec
from tests.support.scheduler_harness import node as node_of

pytestmark = pytest.mark.unit


def spec() -> JobSpec:
    return normalize_job(
        {
            "ID": "web",
            "Type": "service",
            "Constraints": [{"LTarget": "${attr.kernel.name}", "RTarget": "linux"}],
            "TaskGroups": [
                {
                    "Name": "g",
                    "Count": 3,
                    "EphemeralDisk": {"SizeMB": 500},
                    "Networks": [
                        {"ReservedPorts": [{"Label": "db", "Value": 5432}], "DynamicPorts": [{"Label": "http"}]}
                    ],
                    "Tasks": [
                        {"Name": "a", "Driver": "mock", "Resources": {"CPU": 200, "MemoryMB": 128}},
                        {
                            "Name": "b",
                            "Driver": "raw_exec",
                            "Resources": {"CPU": 300, "MemoryMB": 256, "MemoryMaxMB": 512},
                        },
                    ],
                }
            ],
        }
    )


def test_job_from_spec_sums_group_resources() -> None:
    job = Job.from_spec(spec(), version=2, job_modify_index=7)
    group = job.group("g")
    assert group is not None and group.count == 3
    assert group.resources == Resources(cpu=500, memory_mb=384, disk_mb=500, memory_max_mb=640)
    assert group.drivers == {"mock", "raw_exec"}
    assert group.networks[0].reserved_ports[0].value == 5432
    assert group.update is not None and group.update.max_parallel == 1
    assert group.reschedule is not None and group.reschedule.unlimited
    assert job.constraints[0].operand == "="
    assert (job.version, job.job_modify_index) == (2, 7)


def test_node_readiness_and_allocatable() -> None:
    node = node_of("n", cpu=4000, mem=8192, disk=1000, reserved=Resources(cpu=100, memory_mb=256))
    assert node.ready_for_placement
    assert node.allocatable == Resources(cpu=3900, memory_mb=7936, disk_mb=1000)
    assert Resources(cpu=3900, memory_mb=7936, disk_mb=1000).fits_within(node.allocatable)
    assert not Resources(cpu=3901).fits_within(node.allocatable)
    assert not dataclasses.replace(node, draining=True).ready_for_placement
    # Made once per node, and not a field: a copy with other capacity has its own.
    assert node.allocatable is node.allocatable
    assert dataclasses.replace(node, reserved=Resources()).allocatable == node.capacity


@pytest.mark.parametrize(
    ("desired", "client", "terminal"),
    [
        ("run", "running", False),
        ("run", "pending", False),
        ("stop", "running", True),
        ("evict", "running", True),
        ("run", "complete", True),
        ("run", "failed", True),
        ("run", "lost", True),
        ("run", "unknown", False),
    ],
)
def test_allocation_terminal(desired: AllocDesiredStatus, client: AllocClientStatus, terminal: bool) -> None:
    alloc = Allocation(
        id=uuid.uuid4(),
        namespace="default",
        job_id="web",
        job_version=0,
        task_group="g",
        name="web.g[0]",
        node_id=uuid.uuid4(),
        eval_id=uuid.uuid4(),
        desired_status=desired,
        client_status=client,
        resources=Resources(),
    )
    assert alloc.terminal is terminal
