"""A task's `action` blocks in a job file become Nomad's Task.Actions: a list of {Name,
Command, Args}, one per block, the label as the Name."""

from __future__ import annotations

import pytest

from app.jobspec.hcl import parse_hcl

pytestmark = pytest.mark.unit

JOB = """
job "j" {
  group "g" {
    task "t" {
      driver = "raw_exec"
      config { command = "sleep" }
      action "hello" {
        command = "/bin/echo"
        args    = ["hi", "there"]
      }
      action "date" {
        command = "date"
      }
    }
  }
}
"""


def test_action_blocks_become_the_tasks_actions() -> None:
    groups = parse_hcl(JOB)["TaskGroups"]
    assert isinstance(groups, list) and isinstance(groups[0], dict)
    tasks = groups[0]["Tasks"]
    assert isinstance(tasks, list) and isinstance(tasks[0], dict)
    assert tasks[0]["Actions"] == [
        {"Name": "hello", "Command": "/bin/echo", "Args": ["hi", "there"]},
        {"Name": "date", "Command": "date"},
    ]
