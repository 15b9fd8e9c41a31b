"""GET /v1/scaling/policies and /v1/scaling/policy/:id, from the jobs' scaling blocks."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register

pytestmark = pytest.mark.integration


def scaled(job_id: str, **fields: Any) -> dict[str, Any]:
    job = minimal_job(job_id, **fields)
    job["TaskGroups"][0]["Scaling"] = {"Min": 1, "Max": 5, "Policy": {"cooldown": "1m"}}
    return job


def listed(client: FlaskClient, query: str = "") -> list[dict[str, Any]]:
    resp = client.get(f"/v1/scaling/policies{query}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body: list[dict[str, Any]] = resp.json  # type: ignore[assignment]
    return body


def test_each_scaling_block_is_a_policy_with_a_stable_id(client: FlaskClient) -> None:
    register(client, scaled("web"))
    register(client, minimal_job("plain"))
    stubs = listed(client)
    assert len(stubs) == 1
    stub = stubs[0]
    assert set(stub) == {"ID", "Enabled", "Type", "Target", "CreateIndex", "ModifyIndex"}
    assert (stub["Type"], stub["Enabled"], stub["Target"]) == (
        "horizontal",
        True,
        {"Namespace": "default", "Job": "web", "Group": "g"},
    )
    policy = client.get(f"/v1/scaling/policy/{stub['ID']}").json
    assert policy is not None
    assert (policy["Min"], policy["Max"], policy["Policy"]) == (1, 5, {"cooldown": "1m"})
    # A new version keeps the policy's ID, with the new version's index.
    register(client, scaled("web", Meta={"v": "2"}))
    again = listed(client)[0]
    assert again["ID"] == stub["ID"] and again["ModifyIndex"] > stub["ModifyIndex"]
    assert again["CreateIndex"] == stub["CreateIndex"]
    # A stopped job's policy is disabled, as Nomad disables it.
    assert client.delete("/v1/job/web").status_code == 200
    assert listed(client)[0]["Enabled"] is False


def test_filters_and_namespaces(client: FlaskClient) -> None:
    assert client.put("/v1/namespace/team-a", json={"Name": "team-a"}).status_code == 200
    register(client, scaled("web"))
    register(client, scaled("api"))
    register(client, scaled("web", Namespace="team-a"))
    assert {p["Target"]["Job"] for p in listed(client)} == {"web", "api"}
    assert [p["Target"]["Job"] for p in listed(client, "?job=api")] == ["api"]
    assert listed(client, "?type=vertical") == []
    assert len(listed(client, "?type=horiz")) == 2
    everywhere = listed(client, "?namespace=*")
    assert sorted(p["Target"]["Namespace"] for p in everywhere) == ["default", "default", "team-a"]
    other = next(p for p in everywhere if p["Target"]["Namespace"] == "team-a")
    assert client.get(f"/v1/scaling/policy/{other['ID']}").status_code == 404  # not in ?namespace=default
    assert client.get(f"/v1/scaling/policy/{other['ID']}?namespace=team-a").status_code == 200
    assert client.get("/v1/scaling/policy/nope").status_code == 404


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.usefixtures("sent")
def test_scaling_policy_list_and_info_as_nomad(client: FlaskClient) -> None:
    register(client, scaled("web"))
    register(client, scaled("api"))
    shown = run("scaling", "policy", "list")
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert lines[0].split() == ["ID", "Enabled", "Type", "Target"]
    assert [line.split()[3] for line in lines[1:]] == [
        "Namespace:default,Job:api,Group:g",
        "Namespace:default,Job:web,Group:g",
    ]
    assert all(len(line.split()[0]) == 8 for line in lines[1:])
    web = next(p for p in listed(client) if p["Target"]["Job"] == "web")
    info = run("scaling", "policy", "info", web["ID"][:6])
    assert info.exit_code == 0, info.output
    assert info.output.splitlines()[:5] == [
        f"ID      = {web['ID'][:8]}",
        "Enabled = true",
        "Target  = Namespace:default,Job:web,Group:g",
        "Min     = 1",
        "Max     = 5",
    ]
    assert '"cooldown": "1m"' in info.output
    assert run("scaling", "policy", "list", "-job", "nope").output == "No policies found\n"
    assert run("scaling", "policy", "info", "zz").exit_code == 1
