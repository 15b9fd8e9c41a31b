"""GET /v1/job/:id/versions?diffs=true: Nomad's Diffs between consecutive versions, or against a
version named by number or tag."""

from __future__ import annotations

import json
from typing import Any

import psycopg
import pytest
from click.testing import CliRunner, Result
from flask.testing import FlaskClient

from app.cli import main
from tests.support.api import minimal_job, register

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def three_versions(client: FlaskClient) -> None:
    """Version 0 with count 2, version 1 with count 3, version 2 with count 3 and a meta key."""
    register(client, minimal_job())
    job = minimal_job()
    job["TaskGroups"][0]["Count"] = 3
    register(client, job)
    register(client, {**job, "Meta": {"owner": "ops"}})


def versions(client: FlaskClient, query: str) -> dict[str, Any]:
    resp = client.get(f"/v1/job/web/versions{query}")
    assert resp.status_code == 200, resp.get_data(as_text=True)
    body: dict[str, Any] = resp.json  # type: ignore[assignment]
    return body


def group_fields(diff: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    return [(f["Type"], f["Name"], f["Old"], f["New"]) for g in diff["TaskGroups"] or () for f in g["Fields"] or ()]


def test_without_diffs_there_are_none(client: FlaskClient) -> None:
    three_versions(client)
    assert versions(client, "")["Diffs"] is None


def test_each_diff_is_from_the_previous_version(client: FlaskClient) -> None:
    three_versions(client)
    body = versions(client, "?diffs=true")
    assert [v["Version"] for v in body["Versions"]] == [2, 1, 0]
    first, second = body["Diffs"]  # the oldest version has nothing to compare with
    assert first["Type"] == "Edited" and first["ID"] == "web"
    assert first["Objects"] is None  # Meta is flattened into fields, as Nomad's flatmap does
    assert first["Fields"] == [{"Type": "Added", "Name": "Meta[owner]", "Old": "", "New": "ops", "Annotations": None}]
    assert group_fields(first) == [] and [g["Type"] for g in first["TaskGroups"]] == ["None"]
    assert group_fields(second) == [("Edited", "Count", "2", "3")]


def test_diff_version_compares_every_version_with_that_one(client: FlaskClient) -> None:
    three_versions(client)
    body = versions(client, "?diffs=true&diff_version=0")
    assert len(body["Diffs"]) == 3
    newest, middle, oldest = body["Diffs"]
    assert group_fields(newest) == [("Edited", "Count", "2", "3")] and newest["Fields"][0]["Name"] == "Meta[owner]"
    assert group_fields(middle) == [("Edited", "Count", "2", "3")] and not middle["Fields"]
    assert oldest["Type"] == "None"


def test_diff_tag_compares_with_the_tagged_version(client: FlaskClient, pg: Conn) -> None:
    three_versions(client)
    pg.execute(
        'UPDATE job_versions SET version_tag = \'{"Name": "golden", "Description": ""}\' '
        "WHERE job_id = 'web' AND version = 1"
    )
    pg.commit()
    body = versions(client, "?diffs=true&diff_tag=golden")
    newest, tagged, oldest = body["Diffs"]
    assert newest["Fields"][0]["Name"] == "Meta[owner]" and group_fields(newest) == []
    assert tagged["Type"] == "None"
    assert group_fields(oldest) == [("Edited", "Count", "3", "2")]


def test_an_unknown_reference_or_bad_parameter_names_it(client: FlaskClient) -> None:
    three_versions(client)
    for query, status, field in (
        ("?diffs=true&diff_tag=nope", 404, "diff_tag"),
        ("?diffs=true&diff_version=9", 404, "diff_version"),
        ("?diffs=maybe", 400, "diffs"),
        ("?diffs=true&diff_version=-1", 400, "diff_version"),
    ):
        resp = client.get(f"/v1/job/web/versions{query}")
        assert resp.status_code == status, query
        assert field in resp.get_data(as_text=True), query


def history(*args: str) -> Result:
    return CliRunner().invoke(main, ["job", "history", *args])


@pytest.mark.usefixtures("sent")
def test_history_p_prints_each_versions_diff_as_nomad(client: FlaskClient) -> None:
    three_versions(client)
    shown = history("-p", "web")
    assert shown.exit_code == 0, shown.output
    blocks = shown.output.rstrip("\n").split("\n\n")
    assert [b.splitlines()[0] for b in blocks] == ["Version     = 2", "Version     = 1", "Version     = 0"]
    assert blocks[0].splitlines()[1:2] == ["Stable      = false"]
    assert blocks[0].splitlines()[3:] == [
        "Diff        = ",
        '+/- Job: "web"',
        '+ Meta[owner]: "ops"',
        '  Task Group: "g"',  # unchanged: no marker, aligned as Nomad's are
        '    Task: "t"',
    ]
    assert blocks[1].splitlines()[3:] == [
        "Diff        = ",
        '+/- Job: "web"',
        '+/- Task Group: "g"',
        '  +/- Count: "2" => "3"',
        '      Task: "t"',
    ]
    assert "Diff" not in blocks[2]  # the oldest version has nothing to compare with


@pytest.mark.usefixtures("sent")
def test_history_flags_as_nomad(client: FlaskClient) -> None:
    three_versions(client)
    against = history("-p", "-diff-version", "2", "-version", "0", "web")
    assert against.exit_code == 0, against.output
    assert '-   Meta[owner]: "ops"' in against.output and '+/- Count: "3" => "2"' in against.output
    plain = history("web")
    assert plain.exit_code == 0 and "Diff" not in plain.output and plain.output.count("Version ") == 3
    as_json = history("-json", "-version", "1", "web")
    assert as_json.exit_code == 0 and json.loads(as_json.output)["Version"] == 1
    assert history("-t", "{{range .}}{{.Version}} {{end}}", "web").output == "2 1 0 "
    for args, message in (
        (("-json", "-p", "web"), "-json and -t are exclusive with -p and -full"),
        (("-diff-tag", "x", "web"), "-diff-tag and -diff-version can only be used with -p"),
        (("-p", "-diff-tag", "x", "-diff-version", "1", "web"), "mutually exclusive"),
    ):
        refused = history(*args)
        assert refused.exit_code == 2 and message in refused.output, args
    missing = history("-p", "-diff-tag", "nope", "web")
    assert missing.exit_code == 1 and "diff_tag" in missing.output


def test_version_diffs_are_contextual(client: FlaskClient) -> None:
    """As Nomad's Job.GetJobVersions: an edited block lists its unchanged fields as None."""
    job = minimal_job()
    job["TaskGroups"][0]["Tasks"][0]["Resources"] = {"CPU": 100, "MemoryMB": 64}
    register(client, job)
    job["TaskGroups"][0]["Tasks"][0]["Resources"] = {"CPU": 300, "MemoryMB": 64}
    register(client, job)
    [diff] = versions(client, "?diffs=true")["Diffs"]
    [task] = diff["TaskGroups"][0]["Tasks"]
    [resources] = [o for o in task["Objects"] if o["Name"] == "Resources"]
    fields = {f["Name"]: (f["Type"], f["Old"], f["New"]) for f in resources["Fields"]}
    assert fields["CPU"] == ("Edited", "100", "300") and fields["MemoryMB"] == ("None", "64", "64")
