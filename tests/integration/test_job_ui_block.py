"""Nomad 1.9+'s job `ui` block (`ui { description, link { label, url } }`): parsed from HCL into
Nomad's `UI: {Description, Links: [{Label, URL}]}`, registered, planned and served back, its
keys checked like every other struct's."""

from __future__ import annotations

from typing import Any

import pytest
from flask.testing import FlaskClient

from tests.support.api import minimal_job, register
from tests.support.nomad_json import problems

pytestmark = pytest.mark.integration
HCL = """
job "web" {
  ui {
    description = "The **web** tier"
    link {
      label = "Docs"
      url   = "https://example.com/docs"
    }
    link {
      label = "Repo"
      url   = "https://example.com/repo"
    }
  }
  group "g" {
    task "t" { driver = "mock" }
  }
}
"""
UI = {
    "Description": "The **web** tier",
    "Links": [
        {"Label": "Docs", "URL": "https://example.com/docs"},
        {"Label": "Repo", "URL": "https://example.com/repo"},
    ],
}


def test_hcl_ui_block_parses_registers_plans_and_reads_back(client: FlaskClient) -> None:
    parsed = client.post("/v1/jobs/parse", json={"JobHCL": HCL})
    assert parsed.status_code == 200, parsed.json
    job: Any = parsed.json
    assert job["UI"] == UI
    planned = client.post("/v1/job/web/plan", json={"Job": job, "Diff": True})
    assert planned.status_code == 200, planned.json
    register(client, job)
    served = client.get("/v1/job/web").json
    assert served is not None and served["UI"] == UI
    assert problems(served, "Job", "Job") == []


def test_json_ui_keys_are_checked(client: FlaskClient) -> None:
    bad = minimal_job("web", UI={"Description": "x", "Links": [{"Label": "a", "Url": "b"}]})
    reply = client.put("/v1/jobs", json={"Job": bad})
    assert reply.status_code == 400 and reply.json is not None
    assert [e["field"] for e in reply.json["errors"]] == ["Job.UI.Links[0].Url"]


def test_a_bad_hcl_ui_block_names_the_argument(client: FlaskClient) -> None:
    reply = client.post("/v1/jobs/parse", json={"JobHCL": HCL.replace("label =", "title =", 1)})
    assert reply.status_code == 400 and reply.json is not None
    assert reply.json["errors"][0]["message"] == 'unsupported argument "title" in link (valid: label, url)'
    assert reply.json["errors"][0]["field"] == "job.hcl:6:7"
