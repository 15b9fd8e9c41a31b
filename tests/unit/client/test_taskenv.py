"""A task's environment and `${…}` interpolation, built as Nomad's client builds them: from
scratch (never the client's own environment), NOMAD_* variables, merged meta, ports, node
attributes; unknown references stay as written."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from client.tasks.taskenv import (
    PATH,
    NodeInfo,
    TaskPaths,
    alloc_index,
    build_env,
    clean_env_name,
    combined_meta,
    dispatch_payload,
    interpolate,
    interpolate_config,
    payload_path,
    replace_env,
)

pytestmark = pytest.mark.unit

NODE = NodeInfo(
    id="node-1",
    name="n1",
    datacenter="dc7",
    node_class="gpu",
    node_pool="edge",
    attributes={"kernel.name": "linux", "unique.network.ip-address": "10.0.0.5", "unique.hostname": "h1"},
    meta={"rack": "r9"},
)
PATHS = TaskPaths(Path("/data/allocs/a1/alloc"), Path("/data/allocs/a1/web"))


def task(**extra: Any) -> dict[str, Any]:
    return {"Name": "web", "Driver": "raw_exec", "Resources": {"CPU": 250, "MemoryMB": 128}, **extra}


def alloc(task_body: dict[str, Any], **job: Any) -> dict[str, Any]:
    return {
        "ID": "0123456789abcdef-0000-0000-0000-000000000000",
        "Name": "shop.g[3]",
        "Namespace": "prod",
        "TaskGroup": "g",
        "JobID": "shop",
        "AllocatedResources": {
            "Shared": {
                "Ports": [
                    {"Label": "http", "Value": 23456, "To": 0, "HostNetwork": "default"},
                    {"Label": "db-port", "Value": 5432, "To": 6543, "HostNetwork": "default"},
                ]
            }
        },
        "Job": {
            "ID": "shop",
            "Name": "shop",
            "Region": "eu",
            "Meta": {"owner": "job", "tier": "job"},
            "TaskGroups": [{"Name": "g", "Meta": {"tier": "group", "zone": "group"}, "Tasks": [task_body]}],
            **job,
        },
    }


def test_environment_holds_the_nomad_variables_and_nothing_of_the_clients(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_DATABASE_URL", "postgresql://secret")
    body = task()
    env, _ = build_env(alloc(body), body, NODE, PATHS)
    ports_and_meta = ("NOMAD_META_", "NOMAD_ADDR_", "NOMAD_HOST_", "NOMAD_IP_")
    assert {k: v for k, v in env.items() if not k.startswith(ports_and_meta)} == {
        "NOMAD_ALLOC_DIR": "/data/allocs/a1/alloc",
        "NOMAD_TASK_DIR": "/data/allocs/a1/web/local",
        "NOMAD_SECRETS_DIR": "/data/allocs/a1/web/secrets",
        "NOMAD_ALLOC_ID": "0123456789abcdef-0000-0000-0000-000000000000",
        "NOMAD_SHORT_ALLOC_ID": "01234567",
        "NOMAD_ALLOC_NAME": "shop.g[3]",
        "NOMAD_ALLOC_INDEX": "3",
        "NOMAD_GROUP_NAME": "g",
        "NOMAD_TASK_NAME": "web",
        "NOMAD_JOB_ID": "shop",
        "NOMAD_JOB_NAME": "shop",
        "NOMAD_NAMESPACE": "prod",
        "NOMAD_REGION": "eu",
        "NOMAD_DC": "dc7",
        "NOMAD_CPU_LIMIT": "250",
        "NOMAD_MEMORY_LIMIT": "128",
        "NOMAD_PORT_http": "23456",
        "NOMAD_PORT_db_port": "6543",
        "NOMAD_ALLOC_PORT_http": "23456",
        "NOMAD_ALLOC_PORT_db-port": "6543",
        "PATH": PATH,
        "HOME": "/data/allocs/a1/web/local",
        "TMPDIR": "/data/allocs/a1/web/tmp",
    }
    assert not any(k.startswith("CORRAL_") for k in env)


def test_ports_give_address_ip_and_host_port_with_the_nodes_address() -> None:
    body = task()
    env, _ = build_env(alloc(body), body, NODE, PATHS)
    assert (env["NOMAD_ADDR_http"], env["NOMAD_IP_http"], env["NOMAD_HOST_PORT_http"]) == (
        "10.0.0.5:23456",
        "10.0.0.5",
        "23456",
    )
    # `To` maps the port the task binds; the host port stays the allocated one. Labels are cleaned.
    assert (env["NOMAD_PORT_db_port"], env["NOMAD_HOST_PORT_db_port"], env["NOMAD_ADDR_db_port"]) == (
        "6543",
        "5432",
        "10.0.0.5:5432",
    )


def test_meta_is_task_over_group_over_job_upper_cased_and_as_is() -> None:
    body = task(Meta={"owner": "task", "Mixed-Case": "x"})
    assert combined_meta(alloc(body)["Job"], "g", body) == {
        "owner": "task",
        "tier": "group",
        "zone": "group",
        "Mixed-Case": "x",
    }
    env, _ = build_env(alloc(body), body, NODE, PATHS)
    meta = {k: v for k, v in env.items() if k.startswith("NOMAD_META_")}
    assert meta == {
        "NOMAD_META_OWNER": "task",
        "NOMAD_META_owner": "task",
        "NOMAD_META_TIER": "group",
        "NOMAD_META_tier": "group",
        "NOMAD_META_ZONE": "group",
        "NOMAD_META_zone": "group",
        "NOMAD_META_MIXED_CASE": "x",
        "NOMAD_META_Mixed_Case": "x",
    }


def test_dispatched_job_sets_parent_id_and_every_optional_meta_key() -> None:
    body = task()
    dispatched = alloc(
        body, ParentID="shop-batch", Dispatched=True, ParameterizedJob={"MetaOptional": ["color"]}, Meta={"size": "L"}
    )
    env, _ = build_env(dispatched, body, NODE, PATHS)
    assert env["NOMAD_JOB_PARENT_ID"] == "shop-batch"
    assert (env["NOMAD_META_color"], env["NOMAD_META_COLOR"], env["NOMAD_META_SIZE"]) == ("", "", "L")
    assert "NOMAD_JOB_PARENT_ID" not in build_env(alloc(body), body, NODE, PATHS)[0]


def test_task_env_is_interpolated_and_may_override_and_extend_the_defaults() -> None:
    body = task(
        Env={
            "WHERE": "${node.unique.name}/${attr.kernel.name}/${meta.rack}/${node.datacenter}",
            "ALLOC": "${NOMAD_ALLOC_INDEX}-${NOMAD_META_owner}",
            "PATH": "/opt/bin:${PATH}",
            "UNKNOWN": '${nope} ${env["X"]} $HOME',
            "NOMAD_DC": "overridden",
        },
        Meta={"owner": "${node.class}"},
    )
    env, attrs = build_env(alloc(body), body, NODE, PATHS)
    assert env["WHERE"] == "n1/linux/r9/dc7"
    assert env["ALLOC"] == "3-gpu"  # meta is interpolated before the task's env sees it
    assert env["PATH"] == f"/opt/bin:{PATH}"
    assert env["UNKNOWN"] == '${nope} ${env["X"]} $HOME'
    assert env["NOMAD_DC"] == "overridden"
    assert attrs["node.region"] == "eu" and attrs["node.pool"] == "edge" and attrs["node.unique.id"] == "node-1"


def test_config_interpolation_fills_references_and_leaves_the_rest() -> None:
    env = {"NOMAD_ALLOC_ID": "a-1", "HOME": "/h", "NOMAD_META_x": "mx"}
    attrs = {"node.unique.name": "n1", "attr.unique.hostname": "h1", "meta.rack": "r9", "node.region": "eu"}
    config = {
        "command": "/bin/echo",
        "args": [
            "${NOMAD_ALLOC_ID}",
            "${ node.unique.name }",
            '${attr["unique.hostname"]}',
            "${attr.unique.hostname}",
            "${node.attr.unique.hostname}",
            "${node.meta.rack}",
            '${env["HOME"]}',
            "${meta.rack}/${NOMAD_META_x}",
            "$${NOMAD_ALLOC_ID}",
            "${missing.thing}",
            '${env["NOPE"]}',
            '${upper("x")}',
            "%%{ if }",
        ],
        "nested": [{"deep": "${node.region}"}],
        "count": 3,
    }
    assert interpolate_config(config, env, attrs) == {
        "command": "/bin/echo",
        "args": [
            "a-1",
            "n1",
            "h1",
            "h1",
            "h1",
            "r9",
            "/h",
            "r9/mx",
            "${NOMAD_ALLOC_ID}",
            "${missing.thing}",
            '${env["NOPE"]}',
            '${upper("x")}',
            "%{ if }",
        ],
        "nested": [{"deep": "eu"}],
        "count": 3,
    }


def test_simple_replacement_matches_nomads_rules() -> None:
    assert replace_env("${a}-${b.c}-${d}", {"a": "1"}, {"b.c": "2", "a": "x"}) == "1-2-${d}"
    assert replace_env('${env["a"]}', {"a": "1"}) == '${env["a"]}'
    assert interpolate("no references", {}, {}) == "no references"


@pytest.mark.parametrize(
    ("name", "clean"),
    [("NOMAD_META_a-b", "NOMAD_META_a_b"), ("NOMAD_META_x.y", "NOMAD_META_x.y"), ("NOMAD_META_é", "NOMAD_META___")],
)
def test_env_names_are_cleaned_like_nomad(name: str, clean: str) -> None:
    assert clean_env_name(name) == clean


def test_alloc_index_and_node_info() -> None:
    assert (alloc_index("a.b[12]"), alloc_index("weird")) == (12, 0)
    node = NodeInfo.of({"ID": "i", "Name": "n", "SecretID": "s3cr3t", "Attributes": {"a": 1}, "Meta": {}})
    assert "s3cr3t" not in repr(node.saved()) and node.attributes == {"a": "1"}
    assert NodeInfo.of(node.saved()) == node


def test_payload_is_decoded_and_its_file_must_stay_in_local(tmp_path: Path) -> None:
    paths = TaskPaths(tmp_path / "alloc", tmp_path / "t")
    assert dispatch_payload({"Payload": base64.b64encode(b"hello").decode()}) == b"hello"
    assert dispatch_payload({"Payload": None}) == b""
    assert payload_path(paths, "in/put.txt") == (tmp_path / "t" / "local" / "in" / "put.txt").resolve()
    assert payload_path(paths, "../secrets/x") is None
    assert payload_path(paths, "/etc/passwd") is None
    assert payload_path(paths, "") is None
