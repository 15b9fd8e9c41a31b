from __future__ import annotations

import copy
from typing import Any

import pytest

from app.jobspec import normalize_job
from tests.support.jobspec_builders import group, job, task

pytestmark = pytest.mark.unit

SECOND = 1_000_000_000
MINUTE = 60 * SECOND
HOUR = 60 * MINUTE

SERVICE_UPDATE = {
    "Stagger": 30 * SECOND,
    "MaxParallel": 1,
    "HealthCheck": "checks",
    "MinHealthyTime": 10 * SECOND,
    "HealthyDeadline": 5 * MINUTE,
    "ProgressDeadline": 10 * MINUTE,
    "AutoRevert": False,
    "AutoPromote": False,
    "Canary": 0,
}
SERVICE_RESTART = {"Attempts": 2, "Interval": 30 * MINUTE, "Delay": 15 * SECOND, "Mode": "fail"}
BATCH_RESTART = {"Attempts": 3, "Interval": 24 * HOUR, "Delay": 15 * SECOND, "Mode": "fail"}
SERVICE_RESCHEDULE = {
    "Attempts": 0,
    "Interval": 0,
    "Delay": 30 * SECOND,
    "DelayFunction": "exponential",
    "MaxDelay": HOUR,
    "Unlimited": True,
}
BATCH_RESCHEDULE = {
    "Attempts": 1,
    "Interval": 24 * HOUR,
    "Delay": 5 * SECOND,
    "DelayFunction": "constant",
    "MaxDelay": 0,
    "Unlimited": False,
}
SERVICE_MIGRATE = {
    "MaxParallel": 1,
    "HealthCheck": "checks",
    "MinHealthyTime": 10 * SECOND,
    "HealthyDeadline": 5 * MINUTE,
}


def minimal() -> dict[str, Any]:
    return {"ID": "cache", "TaskGroups": [{"Name": "redis", "Tasks": [{"Name": "redis", "Driver": "docker"}]}]}


def test_minimal_job_gets_every_default() -> None:
    assert normalize_job(minimal()) == {
        "ID": "cache",
        "Name": "cache",
        "Namespace": "default",
        "Region": "global",
        "Type": "service",
        "Priority": 50,
        "Datacenters": ["*"],
        "NodePool": "default",
        "AllAtOnce": False,
        "Stop": False,
        "Meta": {},
        "Constraints": [],
        "Affinities": [],
        "Spreads": [],
        "Update": SERVICE_UPDATE,
        "TaskGroups": [
            {
                "Name": "redis",
                "Count": 1,
                "Constraints": [],
                "Affinities": [],
                "Spreads": [],
                "Networks": [],
                "EphemeralDisk": {"SizeMB": 300},
                "RestartPolicy": SERVICE_RESTART,
                "ReschedulePolicy": SERVICE_RESCHEDULE,
                "Update": SERVICE_UPDATE,
                "Migrate": SERVICE_MIGRATE,
                "Meta": {},
                "Tasks": [
                    {
                        "Name": "redis",
                        "Driver": "docker",
                        "User": "",
                        "Leader": False,
                        "KillSignal": "",
                        "Config": {},
                        "Env": {},
                        "Meta": {},
                        "Constraints": [],
                        "Affinities": [],
                        "Resources": {"CPU": 100, "MemoryMB": 300, "MemoryMaxMB": 0, "Cores": 0},
                        "RestartPolicy": SERVICE_RESTART,
                        "KillTimeout": 5 * SECOND,
                        "ShutdownDelay": 0,
                    }
                ],
            }
        ],
    }


def test_input_is_not_modified() -> None:
    payload = minimal()
    before = copy.deepcopy(payload)
    normalize_job(payload)
    assert payload == before


def test_explicit_values_are_kept() -> None:
    out = normalize_job(
        job(Name="Pretty", Namespace="prod", Region="eu", Priority=90, Datacenters=["dc*"], NodePool="gpu", Stop=True)
    )
    assert (out["Name"], out["Namespace"], out["Region"], out["Priority"]) == ("Pretty", "prod", "eu", 90)
    assert (out["Datacenters"], out["NodePool"], out["Stop"]) == (["dc*"], "gpu", True)


def test_nulls_mean_unset() -> None:
    out = normalize_job(job(Priority=None, Datacenters=None, Update=None, Meta=None, Constraints=None))
    assert out["Priority"] == 50
    assert out["Datacenters"] == ["*"]
    assert out["Update"] == SERVICE_UPDATE
    assert out["Meta"] == {}
    assert out["Constraints"] == []


def test_untyped_nomad_fields_are_preserved_at_every_level() -> None:
    payload = job(
        VaultToken="",
        Multiregion=None,
        ConsulNamespace={"nested": [1, {"x": None}]},
        TaskGroups=[
            group(
                Services=[{"Name": "web", "PortLabel": "http", "Checks": [{"Interval": 10 * SECOND}]}],
                Volumes={"data": {"Type": "host", "Source": "data", "PerAlloc": False}},
                EphemeralDisk={"SizeMB": 500, "Sticky": True},
                Networks=[
                    {
                        "Mode": "bridge",
                        "DNS": {"Servers": ["1.1.1.1"]},
                        "DynamicPorts": [{"Label": "h", "IgnoreCollision": True}],
                    }
                ],
                Tasks=[
                    task(
                        Templates=[{"EmbeddedTmpl": "hi", "DestPath": "local/x"}],
                        Resources={"CPU": 200, "Devices": [{"Name": "nvidia/gpu"}]},
                        Lifecycle={"Hook": "prestart"},
                        Constraints=[{"LTarget": "${attr.os}", "RTarget": "linux"}],
                        LogConfig={"MaxFiles": 3},
                    )
                ],
            )
        ],
    )
    out: Any = normalize_job(payload)  # a key JobSpec types as a string holds what was sent
    assert out["VaultToken"] == ""
    assert "Multiregion" in out and out["Multiregion"] is None
    assert out["ConsulNamespace"] == {"nested": [1, {"x": None}]}
    out_group = out["TaskGroups"][0]
    # Services are typed now (corral acts on provider "nomad"): Nomad's canonical form, with
    # what was sent kept.
    service = out_group["Services"][0]
    assert (service["Name"], service["PortLabel"], service["Provider"]) == ("web", "http", "consul")
    assert service["Checks"][0]["Interval"] == 10 * SECOND
    # Typed now (the scheduler places on host volumes): Nomad's fields filled, the others kept.
    assert out_group["Volumes"] == {
        "data": {"Name": "", "Type": "host", "Source": "data", "ReadOnly": False, "Sticky": False, "PerAlloc": False}
    }
    assert out_group["EphemeralDisk"] == {"SizeMB": 500, "Sticky": True}
    assert out_group["Networks"][0]["DNS"] == {"Servers": ["1.1.1.1"]}
    assert out_group["Networks"][0]["DynamicPorts"][0]["IgnoreCollision"] is True
    out_task = out_group["Tasks"][0]
    assert out_task["Templates"][0] | {"EmbeddedTmpl": "hi", "DestPath": "local/x"} == out_task["Templates"][0]
    assert out_task["Templates"][0]["ChangeMode"] == "restart"  # Nomad's defaults, now that corral renders them
    assert out_task["Lifecycle"] == {"Hook": "prestart", "Sidecar": False}
    assert out_task["Resources"]["Devices"] == [{"Name": "nvidia/gpu"}]
    assert out_task["LogConfig"] == {"MaxFiles": 3, "MaxFileSizeMB": 10, "Disabled": False}  # Nomad's defaults


def test_config_env_and_meta_are_kept_verbatim() -> None:
    config = {"image": "redis:7", "ports": ["db"], "mount": [{"type": "bind"}], "nested": {"a": None}}
    out = normalize_job(job(TaskGroups=[group(Tasks=[task(Config=config, Env={"FOO": "bar"}, Meta={"k.x": "v"})])]))
    out_task = out["TaskGroups"][0]["Tasks"][0]
    assert out_task["Config"] == config
    assert out_task["Env"] == {"FOO": "bar"}
    assert out_task["Meta"] == {"k.x": "v"}


def test_batch_defaults() -> None:
    out = normalize_job(job(Type="batch"))
    out_group = out["TaskGroups"][0]
    assert out_group["RestartPolicy"] == BATCH_RESTART
    assert out_group["ReschedulePolicy"] == BATCH_RESCHEDULE
    assert "Update" not in out and "Update" not in out_group
    assert "Migrate" not in out_group


@pytest.mark.parametrize(("job_type", "restart"), [("system", SERVICE_RESTART), ("sysbatch", BATCH_RESTART)])
def test_system_type_defaults(job_type: str, restart: dict[str, Any]) -> None:
    out = normalize_job(job(Type=job_type))
    out_group = out["TaskGroups"][0]
    assert out_group["Count"] == 1
    assert out_group["RestartPolicy"] == restart
    assert "ReschedulePolicy" not in out_group
    assert "Migrate" not in out_group
    assert "Update" not in out_group


def test_system_job_update_is_copied_into_groups() -> None:
    out = normalize_job(job(Type="system", Update={"MaxParallel": 2}))
    assert out["TaskGroups"][0]["Update"] == {**SERVICE_UPDATE, "MaxParallel": 2}


def test_job_update_is_merged_into_groups() -> None:
    payload = job(
        Update={"MaxParallel": 3, "Stagger": "10s"},
        TaskGroups=[group(Name="a"), group(Name="b", Update={"Canary": 2, "Stagger": "1m"})],
    )
    out = normalize_job(payload)
    assert out["Update"] == {**SERVICE_UPDATE, "MaxParallel": 3, "Stagger": 10 * SECOND}
    assert out["TaskGroups"][0]["Update"] == out["Update"]
    assert out["TaskGroups"][1]["Update"] == {**SERVICE_UPDATE, "MaxParallel": 3, "Canary": 2, "Stagger": MINUTE}


def test_partial_policies_are_completed_from_type_defaults() -> None:
    payload = job(
        Type="batch",
        TaskGroups=[
            group(
                RestartPolicy={"Attempts": 5, "Mode": "delay"},
                ReschedulePolicy={"Unlimited": True, "DelayFunction": "exponential", "MaxDelay": "10m"},
            )
        ],
    )
    out_group = normalize_job(payload)["TaskGroups"][0]
    assert out_group["RestartPolicy"] == {**BATCH_RESTART, "Attempts": 5, "Mode": "delay"}
    assert out_group["ReschedulePolicy"] == {
        **BATCH_RESCHEDULE,
        "Unlimited": True,
        "DelayFunction": "exponential",
        "MaxDelay": 10 * MINUTE,
    }


def test_job_reschedule_is_merged_into_groups() -> None:
    out = normalize_job(job(Reschedule={"Delay": "1m"}, TaskGroups=[group(ReschedulePolicy={"MaxDelay": "2h"})]))
    assert out["Reschedule"] == {**SERVICE_RESCHEDULE, "Delay": MINUTE}
    assert out["TaskGroups"][0]["ReschedulePolicy"] == {**SERVICE_RESCHEDULE, "Delay": MINUTE, "MaxDelay": 2 * HOUR}


def test_job_migrate_is_merged_into_groups() -> None:
    out = normalize_job(job(Migrate={"MaxParallel": 4}))
    assert out["TaskGroups"][0]["Migrate"] == {**SERVICE_MIGRATE, "MaxParallel": 4}


def test_task_restart_policy_merges_over_the_group_one() -> None:
    payload = job(
        TaskGroups=[
            group(RestartPolicy={"Attempts": 4}, Tasks=[task(), task(Name="b", RestartPolicy={"Delay": "20s"})])
        ]
    )
    out_group = normalize_job(payload)["TaskGroups"][0]
    assert out_group["Tasks"][0]["RestartPolicy"] == {**SERVICE_RESTART, "Attempts": 4}
    assert out_group["Tasks"][1]["RestartPolicy"] == {**SERVICE_RESTART, "Attempts": 4, "Delay": 20 * SECOND}


def test_cores_replace_the_cpu_default() -> None:
    out = normalize_job(job(TaskGroups=[group(Tasks=[task(Resources={"Cores": 2})])]))
    assert out["TaskGroups"][0]["Tasks"][0]["Resources"] == {"CPU": 0, "MemoryMB": 300, "MemoryMaxMB": 0, "Cores": 2}


def test_network_and_port_defaults() -> None:
    payload = job(
        TaskGroups=[
            group(Networks=[{"ReservedPorts": [{"Label": "http", "Value": 80}], "DynamicPorts": [{"Label": "db"}]}])
        ]
    )
    network = normalize_job(payload)["TaskGroups"][0]["Networks"][0]
    assert network == {
        "Mode": "host",
        "ReservedPorts": [{"Label": "http", "Value": 80, "To": 0, "HostNetwork": "default"}],
        "DynamicPorts": [{"Label": "db", "Value": 0, "To": 0, "HostNetwork": "default"}],
    }


def test_placement_defaults() -> None:
    payload = job(
        Constraints=[{"LTarget": "${attr.os}", "RTarget": "linux"}],
        Affinities=[{"LTarget": "${node.class}", "RTarget": "big"}],
        Spreads=[{"Attribute": "${node.datacenter}", "SpreadTarget": [{"Value": "dc1"}]}],
    )
    out = normalize_job(payload)
    assert out["Constraints"] == [{"LTarget": "${attr.os}", "RTarget": "linux", "Operand": "="}]
    assert out["Affinities"] == [{"LTarget": "${node.class}", "RTarget": "big", "Operand": "=", "Weight": 50}]
    assert out["Spreads"] == [
        {"Attribute": "${node.datacenter}", "Weight": 50, "SpreadTarget": [{"Value": "dc1", "Percent": 0}]}
    ]


def test_periodic_and_parameterized_defaults() -> None:
    out = normalize_job(job(Type="batch", Periodic={"Spec": "*/5 * * * *"}))
    assert out["Periodic"] == {
        "Enabled": True,
        "Spec": "*/5 * * * *",
        "Specs": [],
        "SpecType": "cron",
        "ProhibitOverlap": False,
        "TimeZone": "UTC",
    }
    out = normalize_job(job(Type="sysbatch", ParameterizedJob={}))
    assert out["ParameterizedJob"] == {"Payload": "optional", "MetaRequired": [], "MetaOptional": []}


def test_empty_time_zone_means_utc() -> None:
    out = normalize_job(job(Type="batch", Periodic={"Spec": "@daily", "TimeZone": ""}))
    config = out["Periodic"]
    assert config is not None and config["TimeZone"] == "UTC"
