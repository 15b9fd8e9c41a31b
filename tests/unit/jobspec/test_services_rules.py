"""`service` and `check` blocks: Nomad's canonical form, its validation (service names, port
labels that must exist in the group network, check types and durations), and the register
warning, which now names only services corral does not act on (provider consul)."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec.durations import SECOND
from app.jobspec.errors import JobSpecError
from app.jobspec.normalize import normalize_job
from app.jobspec.warnings import job_warnings

pytestmark = pytest.mark.unit


def _job(services: list[dict[str, Any]], task_services: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    task: dict[str, Any] = {"Name": "srv", "Driver": "raw_exec", "Config": {"command": "x"}}
    if task_services is not None:
        task["Services"] = task_services
    return {
        "ID": "web",
        "TaskGroups": [
            {"Name": "g", "Networks": [{"DynamicPorts": [{"Label": "http"}]}], "Services": services, "Tasks": [task]}
        ],
    }


def _check(**fields: Any) -> dict[str, Any]:
    return {"Type": "http", "Path": "/", "Interval": "5s", "Timeout": "1s", **fields}


def _errors(job: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(JobSpecError) as caught:
        normalize_job(job)
    return {e.field: e.message for e in caught.value.errors}


def test_nomads_defaults_are_filled_in() -> None:
    out = normalize_job(
        _job([{"Provider": "nomad", "PortLabel": "http", "Checks": [_check()]}], [{"Provider": "nomad"}])
    )
    group = out["TaskGroups"][0]
    service: Any = group["Services"][0]  # Namespace: corral's own stored key, not in ServiceSpec
    assert (service["Name"], service["OnUpdate"], service["AddressMode"], service["Namespace"]) == (
        "web-g",
        "require_healthy",
        "auto",
        "default",
    )
    check = service["Checks"][0]
    assert (check["Name"], check["Interval"], check["Timeout"], check["OnUpdate"]) == (
        'service: "web-g" check',
        5 * SECOND,
        SECOND,
        "require_healthy",
    )
    task_service = group["Tasks"][0]["Services"][0]
    assert (task_service["Name"], task_service["TaskName"]) == ("web-g-srv", "srv")
    assert normalize_job(out) == out  # canonical: a second pass changes nothing


def test_check_restart_merges_the_services_block_under_the_checks() -> None:
    service = {
        "Provider": "nomad",
        "PortLabel": "http",
        "CheckRestart": {"Limit": 3, "Grace": "10s"},
        "Checks": [_check(CheckRestart={"Limit": 5}), _check(Name="second")],
    }
    checks = normalize_job(_job([service]))["TaskGroups"][0]["Services"][0]["Checks"]
    assert [(c["CheckRestart"]["Limit"], c["CheckRestart"]["Grace"]) for c in checks] == [
        (5, 10 * SECOND),
        (3, 10 * SECOND),
    ]


@pytest.mark.parametrize(
    ("service", "field", "words"),
    [
        ({"Name": "web_api"}, "Services[0].Name", "RFC 1123"),
        ({"Name": "x" * 64}, "Services[0].Name", "63 characters"),
        ({"PortLabel": "admin"}, "Services[0].PortLabel", 'port label "admin" does not exist'),
        ({"Provider": "etcd"}, "Services[0].Provider", "must be one of consul, nomad"),
        ({"Checks": [_check(Type="grpc")]}, "Services[0].Checks[0].Type", "must be one of http, tcp, script"),
        ({"Checks": [_check(Path="")]}, "Services[0].Checks[0].Path", "http path"),
        ({"Checks": [_check(Path="http://x/")]}, "Services[0].Checks[0].Path", "relative"),
        ({"Checks": [_check(Interval="500ms")]}, "Services[0].Checks[0].Interval", "at least 1s"),
        ({"Checks": [_check(Timeout=0)]}, "Services[0].Checks[0].Timeout", "is required"),
        ({"Checks": [_check(PortLabel="nope")]}, "Services[0].Checks[0].PortLabel", "does not exist"),
        ({"Checks": [_check(Type="script")]}, "Services[0].Checks[0].Command", "is required"),
        ({"Checks": [_check(Type="script", Command="/bin/true")]}, "Services[0].Checks[0].TaskName", "task"),
        (
            {"Checks": [_check(OnUpdate="ignore", CheckRestart={"Limit": 1})]},
            "Services[0].Checks[0].OnUpdate",
            "check_restart",
        ),
        ({"Checks": [_check(Method="FETCH")]}, "Services[0].Checks[0].Method", "not supported"),
    ],
)
def test_invalid_services_are_refused_naming_the_field(service: dict[str, Any], field: str, words: str) -> None:
    errors = _errors(_job([{"Name": "web", "Provider": "nomad", "PortLabel": "http", **service}]))
    matching = {k: v for k, v in errors.items() if k.endswith(field)}
    assert matching and words in next(iter(matching.values())), errors


def test_a_check_needs_a_port_from_its_service_or_itself() -> None:
    errors = _errors(_job([{"Name": "web", "Provider": "nomad", "Checks": [_check(Type="tcp")]}]))
    assert any(k.endswith("Checks[0].PortLabel") and "requires a port" in v for k, v in errors.items())
    assert normalize_job(_job([{"Name": "web", "Provider": "nomad", "Checks": [_check(Type="tcp", PortLabel="http")]}]))


def test_only_consul_services_are_warned_about() -> None:
    nomad = normalize_job(_job([{"Name": "web", "Provider": "nomad", "PortLabel": "http"}]))
    assert job_warnings(nomad) == []
    consul = normalize_job(_job([{"Name": "web", "PortLabel": "http"}], [{"Name": "t", "Provider": "consul"}]))
    warned = job_warnings(consul)
    assert len(warned) == 2 and all('provider "consul"' in line and "does not act" in line for line in warned)
