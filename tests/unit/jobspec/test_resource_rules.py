"""Task resources, ephemeral disk and group networks."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import normalize_job
from tests.support.jobspec_builders import group, job, messages_at, task

pytestmark = pytest.mark.unit

TASK = "Job.TaskGroups[0].Tasks[0]"
GROUP = "Job.TaskGroups[0]"


def with_resources(**resources: Any) -> dict[str, Any]:
    return job(TaskGroups=[group(Tasks=[task(Resources=resources)])])


def with_network(**network: Any) -> dict[str, Any]:
    return job(TaskGroups=[group(Networks=[network])])


@pytest.mark.parametrize(
    ("payload", "path", "message"),
    [
        (with_resources(CPU=0), f"{TASK}.Resources.CPU", "must be at least 1, got 0"),
        (with_resources(MemoryMB=9), f"{TASK}.Resources.MemoryMB", "must be at least 10, got 9"),
        (
            with_resources(MemoryMB=512, MemoryMaxMB=256),
            f"{TASK}.Resources.MemoryMaxMB",
            "must be at least MemoryMB (512) when set, got 256",
        ),
        (
            with_resources(MemoryMaxMB=-1),
            f"{TASK}.Resources.MemoryMaxMB",
            "must be at least MemoryMB (300) when set, got -1",
        ),
        (with_resources(Cores=-1), f"{TASK}.Resources.Cores", "must not be negative, got -1"),
        (
            with_resources(Cores=2, CPU=500),
            f"{TASK}.Resources.Cores",
            "cannot be combined with CPU; ask for either, got Cores 2 and CPU 500",
        ),
        (
            job(TaskGroups=[group(EphemeralDisk={"SizeMB": 0})]),
            f"{GROUP}.EphemeralDisk.SizeMB",
            "must be at least 1, got 0",
        ),
        (
            job(TaskGroups=[group(Networks=[{}, {}])]),
            f"{GROUP}.Networks",
            "must contain at most one network, got 2",
        ),
        (with_network(ReservedPorts=[{"Value": 80}]), f"{GROUP}.Networks[0].ReservedPorts[0].Label", "is required"),
        (with_network(DynamicPorts=[{"Label": ""}]), f"{GROUP}.Networks[0].DynamicPorts[0].Label", "is required"),
        (
            with_network(ReservedPorts=[{"Label": "http", "Value": 80}], DynamicPorts=[{"Label": "http"}]),
            f"{GROUP}.Networks[0].DynamicPorts[0].Label",
            'duplicate port label "http"',
        ),
        (
            with_network(DynamicPorts=[{"Label": "a"}, {"Label": "a"}]),
            f"{GROUP}.Networks[0].DynamicPorts[1].Label",
            'duplicate port label "a"',
        ),
        (
            with_network(ReservedPorts=[{"Label": "http"}]),
            f"{GROUP}.Networks[0].ReservedPorts[0].Value",
            "must be between 1 and 65535, got 0",
        ),
        (
            with_network(ReservedPorts=[{"Label": "http", "Value": 70000}]),
            f"{GROUP}.Networks[0].ReservedPorts[0].Value",
            "must be between 1 and 65535, got 70000",
        ),
        (
            with_network(ReservedPorts=[{"Label": "a", "Value": 80}, {"Label": "b", "Value": 80}]),
            f"{GROUP}.Networks[0].ReservedPorts[1].Value",
            'port 80 is already reserved by "a"',
        ),
        (
            with_network(DynamicPorts=[{"Label": "db", "Value": 6379}]),
            f"{GROUP}.Networks[0].DynamicPorts[0].Value",
            "must be 0 for a dynamic port (use ReservedPorts for a static one), got 6379",
        ),
        (
            with_network(DynamicPorts=[{"Label": "db", "To": -2}]),
            f"{GROUP}.Networks[0].DynamicPorts[0].To",
            "must be between -1 and 65535, got -2",
        ),
        (
            with_network(ReservedPorts=[{"Label": "db", "Value": 80, "To": 65536}]),
            f"{GROUP}.Networks[0].ReservedPorts[0].To",
            "must be between -1 and 65535, got 65536",
        ),
        (
            with_network(DynamicPorts=[{"Label": "db", "To": "6379"}]),
            f"{GROUP}.Networks[0].DynamicPorts[0].To",
            "must be an integer, got string",
        ),
    ],
)
def test_resource_and_network_rules(payload: dict[str, Any], path: str, message: str) -> None:
    assert message in messages_at(payload, path)


def test_valid_resources_and_ports_pass() -> None:
    payload = job(
        TaskGroups=[
            group(
                EphemeralDisk={"SizeMB": 1},
                Networks=[
                    {
                        "Mode": "bridge",
                        "ReservedPorts": [
                            {"Label": "http", "Value": 8080, "To": -1},
                            {"Label": "alt", "Value": 8080, "HostNetwork": "public"},
                        ],
                        "DynamicPorts": [{"Label": "db", "To": 6379}],
                    }
                ],
                Tasks=[task(Resources={"CPU": 1, "MemoryMB": 10, "MemoryMaxMB": 10})],
            )
        ]
    )
    out = normalize_job(payload)
    assert out["TaskGroups"][0]["Networks"][0]["Mode"] == "bridge"


def test_cores_alone_are_accepted() -> None:
    out = normalize_job(with_resources(Cores=4, MemoryMB=1024))
    assert out["TaskGroups"][0]["Tasks"][0]["Resources"]["Cores"] == 4


INT32_MAX = 2**31 - 1


@pytest.mark.parametrize("key", ["CPU", "MemoryMB", "MemoryMaxMB", "Cores", "DiskMB"])
def test_task_resources_are_bounded_to_int32(key: str) -> None:
    assert f"must be at most {INT32_MAX}, got {INT32_MAX + 1}" in " ".join(
        messages_at(with_resources(**{key: INT32_MAX + 1}), f"{TASK}.Resources.{key}")
    )


def test_ephemeral_disk_is_bounded_to_int32() -> None:
    payload = job(TaskGroups=[group(EphemeralDisk={"SizeMB": INT32_MAX + 1})])
    assert messages_at(payload, "Job.TaskGroups[0].EphemeralDisk.SizeMB") == [
        f"must be at most {INT32_MAX}, got {INT32_MAX + 1}"
    ]


def test_disk_mb_is_passed_through_only_when_sent() -> None:
    assert "DiskMB" not in normalize_job(job())["TaskGroups"][0]["Tasks"][0]["Resources"]
    assert normalize_job(with_resources(DiskMB=500))["TaskGroups"][0]["Tasks"][0]["Resources"]["DiskMB"] == 500


@pytest.mark.parametrize(
    ("port", "field"),
    [({"Label": "a", "Value": 2**40}, "Value"), ({"Label": "a", "Value": 80, "To": 2**40}, "To")],
)
def test_port_values_beyond_int32_are_rejected(port: dict[str, Any], field: str) -> None:
    payload = job(TaskGroups=[group(Networks=[{"ReservedPorts": [port]}])])
    assert messages_at(payload, f"Job.TaskGroups[0].Networks[0].ReservedPorts[0].{field}")
