"""Agent and operator routes of issue 42 and their commands: /v1/evaluations/count, DELETE
/v1/operator/keyring/key/:id (`operator root keyring remove`), /v1/agent/pprof/cmdline, the 501s
of /v1/agent/monitor/export and /v1/agent/reload, `operator metrics`, `system reconcile
summaries` and the `debug` alias, with their ACLs."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator

import pytest
from click.testing import CliRunner, Result
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from app.cli import main
from app.settings.config import Settings
from tests.support.api import json_body, minimal_job, register
from tests.support.rows import Conn, insert_allocation, insert_node

pytestmark = pytest.mark.integration


def cli(*args: str) -> Result:
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output
    return result


def test_evaluations_count_by_namespace_and_filter(client: FlaskClient, pg: Conn) -> None:
    assert client.put("/v1/namespace/other", json={"Name": "other"}).status_code == 200
    register(client, minimal_job("a"))
    register(client, minimal_job("b"))
    register(client, minimal_job("c", Namespace="other"))
    pg.execute("UPDATE evaluations SET status = 'complete' WHERE job_id = 'b'")

    def count(query: str) -> int:
        answer = client.get(f"/v1/evaluations/count{query}")
        assert answer.status_code == 200, answer.get_data(as_text=True)
        body = json_body(answer)
        assert set(body) == {"Count", "Index"} and body["Index"] == int(answer.headers["X-Nomad-Index"])
        assert isinstance(body["Count"], int)
        return body["Count"]

    assert count("") == 2  # the default namespace
    assert count("?namespace=other") == 1
    assert count("?namespace=*") == 3
    assert count('?namespace=*&filter=Status == "pending"') == 2
    assert count('?filter=JobID == "b"') == 1
    assert count('?namespace=other&filter=JobID == "a"') == 0
    bad = client.get("/v1/evaluations/count?filter=JobID ==")
    assert bad.status_code == 400 and "filter" in bad.get_data(as_text=True)
    unknown = client.get('/v1/evaluations/count?filter=Colour == "red"')
    assert unknown.status_code == 400 and "filter" in unknown.get_data(as_text=True)


def _keys(client: FlaskClient) -> list[dict[str, object]]:
    keys: list[dict[str, object]] = json_body(client.get("/v1/operator/keyring/keys"))
    return keys


@pytest.mark.usefixtures("sent")
def test_keyring_remove_refuses_the_active_and_sealing_keys(client: FlaskClient) -> None:
    assert client.put("/v1/var/app/one", json={"Items": {"a": "1"}}).status_code == 200
    sealing = str(_keys(client)[0]["KeyID"])
    active = str(json_body(client.put("/v1/operator/keyring/rotate"))["Key"]["KeyID"])

    refused = client.delete(f"/v1/operator/keyring/key/{active}")
    assert refused.status_code == 400 and "call rotate first" in refused.get_data(as_text=True)
    in_use = client.delete(f"/v1/operator/keyring/key/{sealing}?force=true")
    assert in_use.status_code == 409 and "root key in use" in in_use.get_data(as_text=True)
    assert "rotate -full" in in_use.get_data(as_text=True)
    assert client.delete("/v1/operator/keyring/key/00000000-0000-0000-0000-000000000001").status_code == 404
    not_uuid = client.delete("/v1/operator/keyring/key/nope")
    assert not_uuid.status_code == 400 and "KeyID" in not_uuid.get_data(as_text=True)
    bad_force = client.delete(f"/v1/operator/keyring/key/{sealing}?force=maybe")
    assert bad_force.status_code == 400 and "force" in bad_force.get_data(as_text=True)

    # Re-sealed under the active key, the old key seals nothing: the CLI removes it by prefix.
    client.put("/v1/operator/keyring/rotate?full")
    current = next(str(k["KeyID"]) for k in _keys(client) if k["State"] == "active")
    removed = cli("operator", "root", "keyring", "remove", sealing[:8])
    assert removed.exit_code == 0, removed.output
    assert removed.output == f"Removed encryption key {sealing}\n"
    assert sealing not in {k["KeyID"] for k in _keys(client)}
    assert json_body(client.get("/v1/var/app/one"))["Items"] == {"a": "1"}  # still opens

    active_refused = cli("operator", "root", "keyring", "remove", current)
    assert active_refused.exit_code == 1 and "call rotate first" in active_refused.output
    missing = cli("operator", "root", "keyring", "remove", "ffffffff")
    assert missing.exit_code == 1 and "No encryption key(s) with prefix or ID 'ffffffff' found" in missing.output
    no_arg = cli("operator", "root", "keyring", "remove")
    assert no_arg.exit_code == 1 and "requires one argument" in no_arg.output


def test_keyring_remove_keeps_a_key_running_allocations_may_use_unless_forced(client: FlaskClient, pg: Conn) -> None:
    reg = register(client, minimal_job())
    node = insert_node(pg)
    alloc = insert_allocation(pg, node, reg["EvalID"])  # running, placed while the first key is active
    assert client.put("/v1/var/app/one", json={"Items": {"a": "1"}}).status_code == 200
    first = str(_keys(client)[0]["KeyID"])
    assert client.put("/v1/operator/keyring/rotate?full").status_code == 200

    in_use = client.delete(f"/v1/operator/keyring/key/{first}")
    assert in_use.status_code == 409 and "allocations placed before it was retired" in in_use.get_data(as_text=True)
    pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (alloc,))
    second = str(json_body(client.put("/v1/operator/keyring/rotate"))["Key"]["KeyID"])
    assert client.delete(f"/v1/operator/keyring/key/{first}").status_code == 200  # nothing runs any more
    pg.execute("UPDATE allocations SET client_status = 'running' WHERE id = %s", (alloc,))
    client.put("/v1/operator/keyring/rotate?full")
    assert client.delete(f"/v1/operator/keyring/key/{second}").status_code == 409
    forced = client.delete(f"/v1/operator/keyring/key/{second}?force=true")
    assert forced.status_code == 200 and json_body(forced)["Index"] == int(forced.headers["X-Nomad-Index"])
    assert {k["KeyID"] for k in _keys(client)}.isdisjoint({first, second})


def test_pprof_cmdline_is_the_processes_argv_and_the_rest_say_501(client: FlaskClient) -> None:
    answer = client.get("/v1/agent/pprof/cmdline")
    assert answer.status_code == 200 and answer.content_type.startswith("text/plain")
    assert answer.get_data(as_text=True).split("\x00") == sys.argv
    assert client.get("/v1/agent/pprof/cmdline?server_id=x").status_code == 400
    for path in ("/v1/agent/pprof/", "/v1/agent/pprof/trace", "/v1/agent/pprof/profile?seconds=1"):
        refused = client.get(path)
        assert refused.status_code == 501 and "py-spy" in refused.get_data(as_text=True)


def test_monitor_export_and_reload_name_what_to_use_instead(client: FlaskClient) -> None:
    export = client.get("/v1/agent/monitor/export?log_since=1m")
    assert export.status_code == 501 and "/v1/agent/monitor" in export.get_data(as_text=True)
    for method in ("PUT", "POST"):
        reload = client.open("/v1/agent/reload", method=method)
        assert reload.status_code == 501 and "CORRAL_" in reload.get_data(as_text=True)


@pytest.mark.usefixtures("sent")
def test_operator_metrics_prints_the_json_prometheus_and_a_template() -> None:
    plain = cli("operator", "metrics")
    assert plain.exit_code == 0, plain.output
    assert {"Gauges", "Counters", "Samples"} <= set(json.loads(plain.output))
    pretty = cli("operator", "metrics", "-pretty")
    assert pretty.exit_code == 0 and pretty.output.startswith("{\n    ")
    prometheus = cli("operator", "metrics", "-format", "prometheus")
    assert prometheus.exit_code == 0 and "# TYPE" in prometheus.output
    as_json = cli("operator", "metrics", "-json")
    assert as_json.exit_code == 0 and "Gauges" in json.loads(as_json.output)
    names = cli("operator", "metrics", "-t", "{{range .Gauges}}{{.Name}}\n{{end}}")
    assert names.exit_code == 0 and names.output.strip()
    bad = cli("operator", "metrics", "-format", "yaml")
    assert bad.exit_code == 1 and "format" in bad.output


@pytest.mark.usefixtures("sent")
def test_system_reconcile_summaries_and_the_debug_alias() -> None:
    done = cli("system", "reconcile", "summaries")
    assert done.exit_code == 0 and done.output == "Successfully reconciled job summaries\n"
    assert main.commands["debug"] is main.commands["operator"].commands["debug"]  # type: ignore[attr-defined]


@pytest.fixture
def acl_app(database_url: str) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=1, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


def test_the_routes_need_nomads_capabilities(acl_app: Flask) -> None:
    api = acl_app.test_client()
    root = {"X-Nomad-Token": api.post("/v1/acl/bootstrap").json["SecretID"]}  # type: ignore[index]
    policies = {
        "agent-read": 'agent { policy = "read" }',
        "agent-write": 'agent { policy = "write" }',
        "operator-read": 'operator { policy = "read" }',
        "operator-write": 'operator { policy = "write" }',
        "default-read": 'namespace "default" { policy = "read" }',
    }
    tokens = {}
    for name, rules in policies.items():
        assert api.put(f"/v1/acl/policy/{name}", json={"Rules": rules}, headers=root).status_code == 200
        made = api.put("/v1/acl/token", json={"Type": "client", "Policies": [name]}, headers=root)
        tokens[name] = {"X-Nomad-Token": made.json["SecretID"]}  # type: ignore[index]
    key = "00000000-0000-0000-0000-000000000001"
    expected = [
        ("GET", "/v1/evaluations/count", "default-read", "agent-write", 200),
        ("GET", "/v1/agent/pprof/cmdline", "agent-write", "agent-read", 200),
        ("GET", "/v1/agent/monitor/export", "agent-read", "operator-write", 501),
        ("PUT", "/v1/agent/reload", "agent-write", "agent-read", 501),
        ("DELETE", f"/v1/operator/keyring/key/{key}", "operator-write", "operator-read", 404),
        ("GET", "/v1/agent/schedulers", "agent-read", "operator-write", 200),
        ("GET", "/v1/agent/schedulers/config", "agent-read", "operator-write", 200),
        ("PUT", "/v1/agent/schedulers/config", "agent-write", "agent-read", 501),
    ]
    for method, path, allowed, denied, status in expected:
        assert api.open(path, method=method).status_code == 403, path
        assert api.open(path, method=method, headers=tokens[denied]).status_code == 403, path
        assert api.open(path, method=method, headers=tokens[allowed]).status_code == status, path
    other = api.get("/v1/evaluations/count?namespace=other", headers=tokens["default-read"])
    assert other.status_code == 403
