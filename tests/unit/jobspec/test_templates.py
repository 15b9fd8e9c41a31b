"""The template block: HCL names to Nomad's API fields, Nomad's defaults, and its rules."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec.errors import JobSpecError
from app.jobspec.hcl import parse_hcl
from app.jobspec.normalize import normalize_job
from app.jobspec.rules.templates import escapes_alloc_dir
from app.jobspec.warnings import job_warnings

pytestmark = pytest.mark.unit

PATH = "Job.TaskGroups[0].Tasks[0].Templates[0]"


def job(template: dict[str, Any]) -> dict[str, Any]:
    task = {"Name": "t", "Driver": "raw_exec", "Templates": [template]}
    return {"ID": "j", "TaskGroups": [{"Name": "g", "Tasks": [task]}]}


def problems(template: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(JobSpecError) as caught:
        normalize_job(job(template))
    return {error.field: error.message for error in caught.value.errors}


def test_hcl_template_block_maps_to_nomads_fields() -> None:
    text = """
job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      template {
        data                 = "x"
        destination          = "local/a.conf"
        env                  = true
        change_mode          = "script"
        perms                = "0600"
        uid                  = 1000
        gid                  = 1000
        splay                = "1s"
        left_delimiter       = "[["
        right_delimiter      = "]]"
        error_on_missing_key = true
        change_script {
          command       = "/bin/reload"
          args          = ["-q"]
          timeout       = "3s"
          fail_on_error = true
        }
        wait {
          min = "1s"
          max = "4s"
        }
      }
    }
  }
}
"""
    [template] = normalize_job(parse_hcl(text))["TaskGroups"][0]["Tasks"][0]["Templates"]
    assert template == {
        "SourcePath": "",
        "DestPath": "local/a.conf",
        "EmbeddedTmpl": "x",
        "ChangeMode": "script",
        "ChangeSignal": "",
        "ChangeScript": {"Command": "/bin/reload", "Args": ["-q"], "Timeout": 3 * 10**9, "FailOnError": True},
        "Splay": 10**9,
        "Perms": "0600",
        "Uid": 1000,
        "Gid": 1000,
        "LeftDelim": "[[",
        "RightDelim": "]]",
        "Envvars": True,
        "ErrMissingKey": True,
        "Wait": {"Min": 10**9, "Max": 4 * 10**9},
    }


def test_hcl_unknown_template_argument_is_refused() -> None:
    text = 'job "j" {\n group "g" {\n task "t" {\n driver = "x"\n template {\n destinaton = "a"\n }\n }\n }\n}\n'
    with pytest.raises(JobSpecError, match='did you mean "destination"'):
        parse_hcl(text)


def test_defaults_are_nomads() -> None:
    [template] = normalize_job(job({"EmbeddedTmpl": "x", "DestPath": "local/x"}))["TaskGroups"][0]["Tasks"][0][
        "Templates"
    ]
    assert template["ChangeMode"] == "restart"
    assert template["Splay"] == 5 * 10**9
    assert template["Perms"] == "0644"
    assert (template["LeftDelim"], template["RightDelim"]) == ("{{", "}}")
    assert template["Envvars"] is False and template["ErrMissingKey"] is False


def test_templates_are_no_longer_warned_about() -> None:
    spec = normalize_job(job({"EmbeddedTmpl": "x", "DestPath": "local/x"}))
    assert job_warnings(spec) == []


@pytest.mark.parametrize(
    ("template", "field", "message"),
    [
        ({"DestPath": "local/x"}, "EmbeddedTmpl", "must be set when SourcePath is not"),
        ({"EmbeddedTmpl": "x"}, "DestPath", "is required"),
        ({"EmbeddedTmpl": "x", "DestPath": "../../etc/passwd"}, "DestPath", "escapes the allocation directory"),
        ({"SourcePath": "../../../etc/shadow", "DestPath": "local/x"}, "SourcePath", "escapes"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "ChangeMode": "reload"}, "ChangeMode", "must be one of"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "ChangeMode": "signal"}, "ChangeSignal", "is required"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "ChangeSignal": "SIGNOPE"}, "ChangeSignal", "not a signal"),
        (
            {"EmbeddedTmpl": "x", "DestPath": "a", "ChangeMode": "signal", "ChangeSignal": "SIGHUP", "Envvars": True},
            "ChangeMode",
            "env template",
        ),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "ChangeMode": "script"}, "ChangeScript.Command", "is required"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "Splay": -1}, "Splay", "must not be negative"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "Perms": "0999"}, "Perms", "octal"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "Uid": -2}, "Uid", "must be -1"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "Wait": {"Min": "5s", "Max": "1s"}}, "Wait.Min", "greater than Max"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "LeftDelim": ""}, "LeftDelim", "must not be empty"),
        ({"EmbeddedTmpl": "x", "DestPath": "a", "Bogus": 1}, "Bogus", "is not a field of Nomad's Template"),
    ],
)
def test_rules(template: dict[str, Any], field: str, message: str) -> None:
    found = problems(template)
    assert message in found[f"{PATH}.{field}"], found


@pytest.mark.parametrize(
    ("path", "escapes"),
    [
        ("local/app.conf", False),
        ("secrets/x", False),
        ("../alloc/data/x", False),  # the shared alloc/ directory is inside the allocation
        ("/etc/x", False),  # joined to the task directory, as Nomad does
        ("..", False),
        ("../..", True),
        ("../../x", True),
        ("local/../../../x", True),
    ],
)
def test_escapes_alloc_dir(path: str, escapes: bool) -> None:
    assert escapes_alloc_dir(path) is escapes
