"""Version tags: PUT|POST|DELETE /v1/job/:id/versions/:name/tag (Nomad 1.9) and `job tag
apply|unset`."""

from __future__ import annotations

from typing import Any

import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register

pytestmark = pytest.mark.integration


def two_versions(client: FlaskClient) -> None:
    register(client, minimal_job())
    register(client, minimal_job(Meta={"v": "1"}))


def tags(client: FlaskClient) -> dict[int, Any]:
    body = client.get("/v1/job/web/versions").json
    assert body is not None
    return {v["Version"]: v["VersionTag"] for v in body["Versions"]}


def test_apply_and_unset_a_tag(client: FlaskClient) -> None:
    two_versions(client)
    resp = client.put("/v1/job/web/versions/golden/tag", json={"Version": 0, "Description": "known good"})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body = resp.json
    assert body is not None and (body["Name"], body["Description"]) == ("golden", "known good")
    assert body["TaggedTime"] > 0 and int(resp.headers["X-Nomad-Index"]) == body["Index"]
    assert tags(client) == {
        1: None,
        0: {"Name": "golden", "Description": "known good", "TaggedTime": body["TaggedTime"]},
    }
    # The same tag on the same version: a new description. On another version: a conflict.
    assert client.put("/v1/job/web/versions/golden/tag", json={"Description": "still good"}).status_code == 200
    assert tags(client)[0]["Description"] == "still good"
    clash = client.put("/v1/job/web/versions/golden/tag", json={"Version": 1})
    assert clash.status_code == 409 and "golden" in clash.get_data(as_text=True)
    latest = client.post("/v1/job/web/versions/newest/tag", json={"Latest": True})
    assert latest.status_code == 200 and tags(client)[1]["Name"] == "newest"
    assert client.delete("/v1/job/web/versions/golden/tag").status_code == 200
    assert tags(client)[0] is None
    gone = client.delete("/v1/job/web/versions/golden/tag")
    assert gone.status_code == 404 and "golden" in gone.get_data(as_text=True)


def test_bad_requests_name_the_field(client: FlaskClient) -> None:
    two_versions(client)
    for body, status, field in (
        ({"Version": 7}, 404, "Version"),
        ({"Version": -1}, 400, "Version"),
        ({"Version": 1, "Latest": True}, 400, "Version"),
        ({"Description": 3}, 400, "Description"),
    ):
        resp = client.put("/v1/job/web/versions/x/tag", json=body)
        assert resp.status_code == status and field in resp.get_data(as_text=True), body
    assert client.put("/v1/job/nope/versions/x/tag", json={}).status_code == 404


def test_a_tagged_version_is_kept_past_the_version_limit(client: FlaskClient) -> None:
    register(client, minimal_job())
    assert client.put("/v1/job/web/versions/first/tag", json={"Version": 0}).status_code == 200
    for i in range(1, 9):
        register(client, minimal_job(Meta={"v": str(i)}))
    assert 0 in tags(client)


def run(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


@pytest.mark.usefixtures("sent")
def test_job_tag_apply_and_unset_as_nomad(client: FlaskClient) -> None:
    two_versions(client)
    applied = run("job", "tag", "apply", "-name", "golden", "-description", "good", "web")
    assert applied.exit_code == 0, applied.output
    assert applied.output == 'Job version 1 tagged with name "golden"\n'
    older = run("job", "tag", "apply", "-name", "old", "-version", "0", "web")
    assert older.output == 'Job version 0 tagged with name "old"\n'
    assert tags(client)[1]["Name"] == "golden" and tags(client)[0]["Name"] == "old"
    clash = run("job", "tag", "apply", "-name", "golden", "-version", "0", "web")
    assert clash.exit_code == 1 and "Error tagging job version" in clash.output
    unset = run("job", "tag", "unset", "-name", "golden", "web")
    assert unset.exit_code == 0 and unset.output == 'Tag "golden" removed from job "web"\n'
    assert run("job", "tag", "unset", "web").exit_code == 2  # -name is required
    assert run("job", "tag", "apply", "web").exit_code == 2
