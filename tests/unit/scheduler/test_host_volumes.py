"""A group's host volume requests as a feasibility check (Nomad's HostVolumeChecker)."""

from __future__ import annotations

import dataclasses

import pytest

from app.scheduler.feasibility.feasible import MISSING_HOST_VOLUMES
from app.structs import HostVolumeAsk, Node
from app.structs.job_spec import host_volumes
from tests.support.scheduler_harness import group, job, node, placed, run, snapshot, uid

pytestmark = pytest.mark.unit


def _with_volumes(base: Node, **volumes: bool) -> Node:
    return dataclasses.replace(base, host_volumes=volumes)


def test_group_lands_only_on_the_node_with_the_volume() -> None:
    nodes = [node("plain"), _with_volumes(node("data"), shared=False), node("other")]
    j = job(groups=[group(count=3, host_volumes=(HostVolumeAsk("shared"),))])
    assert {a.node_name for a in placed(run(snapshot(j, nodes)))} == {"data"}


def test_read_write_ask_needs_a_read_write_volume() -> None:
    nodes = [_with_volumes(node("ro"), shared=True)]
    writer = job(groups=[group(count=1, host_volumes=(HostVolumeAsk("shared", read_only=False),))])
    result = run(snapshot(writer, nodes))
    assert not placed(result)
    metrics = result.failed_tg_allocs["g"]
    assert metrics.constraint_filtered == {MISSING_HOST_VOLUMES: 1} and metrics.nodes_filtered == 1
    reader = job(groups=[group(count=1, host_volumes=(HostVolumeAsk("shared", read_only=True),))])
    assert [a.node_name for a in placed(run(snapshot(reader, nodes)))] == ["ro"]


def test_every_ask_must_be_met() -> None:
    nodes = [_with_volumes(node("one"), a=False), _with_volumes(node("both"), a=False, b=False)]
    j = job(groups=[group(count=2, host_volumes=(HostVolumeAsk("a"), HostVolumeAsk("b")))])
    result = run(snapshot(j, nodes))
    assert {a.node_name for a in placed(result)} == {"both"}


def test_missing_volume_is_the_placement_failure_reason() -> None:
    j = job(groups=[group(count=1, host_volumes=(HostVolumeAsk("nowhere"),))])
    result = run(snapshot(j, [node("a"), node("b")]))
    assert result.failed_tg_allocs["g"].constraint_filtered == {MISSING_HOST_VOLUMES: 2}


def test_only_host_volumes_are_asks() -> None:
    raw = {
        "data": {"Name": "data", "Type": "host", "Source": "shared", "ReadOnly": True},
        "db": {"Name": "db", "Type": "csi", "Source": "ebs"},
    }
    assert host_volumes(raw) == (HostVolumeAsk("shared", True),)
    assert host_volumes(None) == ()


def _with_dynamic(base: Node, *volumes: tuple[str, str]) -> Node:
    return dataclasses.replace(base, dynamic_host_volumes={v: uid(f"{base.name}/{v[0]}/{v[1]}") for v in volumes})


def test_a_ready_dynamic_volume_of_the_jobs_namespace_is_feasible() -> None:
    nodes = [node("plain"), _with_dynamic(node("dyn"), ("default", "scratch")), node("other")]
    j = job(groups=[group(count=2, host_volumes=(HostVolumeAsk("scratch"),))])
    assert {a.node_name for a in placed(run(snapshot(j, nodes)))} == {"dyn"}


def test_a_dynamic_volume_of_another_namespace_is_not() -> None:
    nodes = [_with_dynamic(node("dyn"), ("prod", "scratch"))]
    j = job(groups=[group(count=1, host_volumes=(HostVolumeAsk("scratch"),))])
    result = run(snapshot(j, nodes))
    assert not placed(result)
    assert result.failed_tg_allocs["g"].constraint_filtered == {MISSING_HOST_VOLUMES: 1}
    prod = dataclasses.replace(j, namespace="prod")
    assert [a.node_name for a in placed(run(snapshot(prod, nodes)))] == ["dyn"]


def test_static_and_dynamic_volumes_together_meet_several_asks() -> None:
    both = _with_dynamic(_with_volumes(node("both"), static=False), ("default", "dynamic"))
    only_static = _with_volumes(node("static-only"), static=False)
    j = job(groups=[group(count=1, host_volumes=(HostVolumeAsk("static"), HostVolumeAsk("dynamic")))])
    assert [a.node_name for a in placed(run(snapshot(j, [only_static, both])))] == ["both"]
