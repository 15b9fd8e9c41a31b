"""Hypothesis throws arbitrary and mutated JSON and query strings at the API: never a 5xx (invariant 7)."""

from __future__ import annotations

import copy
import json
from typing import Any
from urllib.parse import quote, urlencode

import psycopg
import pytest
from flask.testing import FlaskClient
from hypothesis import given
from hypothesis import strategies as st

from tests.support.api import minimal_job, node_body
from tests.support.fuzz import (
    FUZZ,
    SENTINEL,
    Ledger,
    body_texts,
    content_types,
    deep_text,
    deep_values,
    integers,
    query_values,
    scalars,
    send,
    texts,
)

pytestmark = pytest.mark.integration

NODE_ID = "5f0c6d1e-0000-4000-8000-000000000001"
# A client may choose its secret at first registration; knowing it lets mutations re-register.
NODE_SECRET = "fuzz-secret"

# Field names the validators look at, so arbitrary objects still reach them.
KEYS = [
    "Job", "Node", "ID", "Name", "Type", "Priority", "Namespace", "Datacenters", "NodePool", "TaskGroups",
    "Count", "Tasks", "Driver", "Config", "Env", "Meta", "Resources", "CPU", "MemoryMB", "MemoryMaxMB",
    "Cores", "DiskMB", "Networks", "ReservedPorts", "DynamicPorts", "Value", "To", "Label", "Constraints",
    "LTarget", "RTarget", "Operand", "Update", "Periodic", "Spec", "RestartPolicy", "Interval", "Delay",
    "EnforceIndex", "JobModifyIndex", "EvalPriority", "PreserveCounts", "NodeResources", "ReservedResources",
    "Cpu", "CpuShares", "Memory", "Disk", "ReservedHostPorts", "Attributes", "Drivers", "Status", "SecretID",
    "Eligibility", "NodeID", "SchedulerAlgorithm", "PreemptionConfig", "SystemSchedulerEnabled",
    "MemoryOversubscriptionEnabled", "RejectJobRegistration", "PauseEvalBroker", "JobHCL",
]  # fmt: skip

keys = st.sampled_from(KEYS) | body_texts
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=5),
    max_leaves=25,
)


def valid_job() -> dict[str, Any]:
    job = minimal_job(
        "fuzz",
        Meta={"team": "a"},
        Priority=50,
        Datacenters=["dc1"],
        Constraints=[{"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}],
        Update={"MaxParallel": 1, "MinHealthyTime": 10_000_000_000},
    )
    group = job["TaskGroups"][0]
    group["RestartPolicy"] = {"Attempts": 2, "Interval": 60_000_000_000, "Delay": 1_000_000_000, "Mode": "fail"}
    task = group["Tasks"][0]
    task.update(Env={"X": "1"}, Resources={"CPU": 100, "MemoryMB": 64}, Config={"run_for": "1s"})
    group["Networks"] = [{"ReservedPorts": [{"Label": "http", "Value": 8080}]}]
    return {"Job": job}


def valid_node() -> dict[str, Any]:
    return {
        "Node": node_body(
            NODE_ID, SecretID=NODE_SECRET, ReservedResources={"Networks": {"ReservedHostPorts": "22,80-90"}}
        )
    }


VALID_CONFIG: dict[str, Any] = {
    "SchedulerAlgorithm": "spread",
    "PreemptionConfig": {"SystemSchedulerEnabled": True, "BatchSchedulerEnabled": False},
    "MemoryOversubscriptionEnabled": True,
}
VALID_ELIGIBILITY: dict[str, Any] = {"Eligibility": "ineligible", "NodeID": NODE_ID}


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found.extend(_paths(item, (*prefix, key)))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found.extend(_paths(item, (*prefix, index)))
    return found


@st.composite
def mutated(draw: st.DrawFn, valid: dict[str, Any]) -> Any:
    """The valid body with one to three of its values replaced, removed, or joined by a stray key."""
    doc: Any = copy.deepcopy(valid)
    for _ in range(draw(st.integers(min_value=1, max_value=3))):
        path = draw(st.sampled_from(_paths(doc)))
        replacement = draw(json_values | st.just(SENTINEL))  # SENTINEL: a deep value, swapped in by send()
        if not path:
            doc = replacement
            continue
        parent = doc
        for part in path[:-1]:
            parent = parent[part]
        action = draw(st.sampled_from(["replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = replacement
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(keys)] = replacement
        else:
            parent.append(replacement)
    return doc


@pytest.fixture
def fuzz_client(client: FlaskClient) -> FlaskClient:
    """The API with a registered node, so eligibility and re-registration reach the database."""
    assert client.put("/v1/node/register", json=valid_node()).status_code == 200
    return client


@pytest.fixture
def ledger(pg: psycopg.Connection[tuple[object, ...]]) -> Ledger:
    return Ledger(pg)


# One value of every JSON type, and one nested far deeper than any job (swapped in as text).
EVERY_TYPE: list[Any] = [None, True, 7, 0.5, "x", [1], {"a": 1}, SENTINEL]
JOB_ROUTES = [("PUT", "/v1/validate/job"), ("PUT", "/v1/jobs"), ("POST", "/v1/job/fuzz/plan")]


def _replaced(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    copied = copy.deepcopy(doc)
    parent: Any = copied
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    return copied


def test_every_position_of_a_valid_job_takes_every_json_type(fuzz_client: FlaskClient, ledger: Ledger) -> None:
    """Validate, register and plan name the field of a value of the wrong type wherever it is,
    at any depth (the validate route read its warnings off the raw spec and 500ed)."""
    deep = deep_text(5_000, "mixed")
    for path in _paths(valid_job())[1:]:
        for value in EVERY_TYPE:
            body = _replaced(valid_job(), path, value)
            for method, url in JOB_ROUTES:
                send(fuzz_client, method, url, body, None, ledger, deep)
    for value in EVERY_TYPE:
        for field in ("JobHCL", "Canonicalize", "Variables"):
            parse = {"JobHCL": 'job "fuzz" { group "g" { task "t" { driver = "mock" } } }', field: value}
            send(fuzz_client, "PUT", "/v1/jobs/parse", parse, None, ledger, deep)


@FUZZ
@given(job=mutated(valid_job()), deep=deep_values, content_type=content_types)
def test_random_values_anywhere_in_a_job_never_5xx_nor_write_on_4xx(
    fuzz_client: FlaskClient, ledger: Ledger, job: Any, deep: str, content_type: str | None
) -> None:
    for method, url in JOB_ROUTES:
        send(fuzz_client, method, url, job, content_type, ledger, deep)


@FUZZ
@given(body=json_values, wrap=st.sampled_from(["", "Job", "Node"]), content_type=content_types)
def test_arbitrary_bodies_never_5xx(fuzz_client: FlaskClient, body: Any, wrap: str, content_type: str | None) -> None:
    payload = {wrap: body} if wrap else body
    send(fuzz_client, "PUT", "/v1/jobs", payload, content_type)
    send(fuzz_client, "PUT", "/v1/node/register", payload, content_type)
    send(fuzz_client, "PUT", "/v1/operator/scheduler/configuration", payload, content_type)
    send(fuzz_client, "PUT", f"/v1/node/{NODE_ID}/eligibility", payload, content_type)


@FUZZ
@given(
    job=mutated(valid_job()),
    node=mutated(valid_node()),
    config=mutated(VALID_CONFIG),
    eligibility=mutated(VALID_ELIGIBILITY),
    content_type=content_types,
)
def test_mutated_valid_bodies_never_5xx(
    fuzz_client: FlaskClient, job: Any, node: Any, config: Any, eligibility: Any, content_type: str | None
) -> None:
    send(fuzz_client, "PUT", "/v1/jobs", job, content_type)
    send(fuzz_client, "POST", "/v1/job/fuzz", job, content_type)
    send(fuzz_client, "PUT", "/v1/node/register", node, content_type)
    send(fuzz_client, "PUT", "/v1/operator/scheduler/configuration", config, content_type)
    send(fuzz_client, "PUT", f"/v1/node/{NODE_ID}/eligibility", eligibility, content_type)


QUERY_KEYS = ["job", "prefix", "namespace", "per_page", "next_token", "status", "reverse", "filter", "all", "wait"]


@FUZZ
@given(
    params=st.dictionaries(st.sampled_from(QUERY_KEYS) | texts, query_values, max_size=5),
    index=st.none() | integers,
)
def test_arbitrary_query_strings_never_5xx(fuzz_client: FlaskClient, params: dict[str, str], index: int | None) -> None:
    if index is not None:
        # A blocking query would wait for a change: keep the wait short.
        params = {**params, "index": str(index), "wait": "10ms"}
    query = urlencode(params)
    for url in ("/v1/jobs", "/v1/evaluations", "/v1/allocations", "/v1/nodes"):
        resp = fuzz_client.get(f"{url}?{query}")
        assert resp.status_code < 500, (url, params, resp.json)
        assert resp.is_json


@FUZZ
@given(job_id=texts | st.uuids().map(str), suffix=st.sampled_from(["", "/summary", "/versions", "/allocations"]))
def test_arbitrary_path_ids_never_5xx(fuzz_client: FlaskClient, job_id: str, suffix: str) -> None:
    ident = quote(job_id, safe="")
    for url in (f"/v1/job/{ident}{suffix}", f"/v1/node/{ident}", f"/v1/evaluation/{ident}", f"/v1/allocation/{ident}"):
        resp = fuzz_client.get(url)
        assert resp.status_code < 500, (url, resp.json)


def test_the_fuzz_bodies_start_out_valid(fuzz_client: FlaskClient) -> None:
    """Mutations start from bodies the API accepts, so they probe the edges, not the door."""
    for method, url, body in [
        ("PUT", "/v1/jobs", valid_job()),
        ("PUT", "/v1/node/register", valid_node()),
        ("PUT", "/v1/operator/scheduler/configuration", VALID_CONFIG),
        ("PUT", f"/v1/node/{NODE_ID}/eligibility", VALID_ELIGIBILITY),
    ]:
        resp = fuzz_client.open(url, method=method, data=json.dumps(body).encode())
        assert resp.status_code == 200, (url, resp.json)
