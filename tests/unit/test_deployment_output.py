"""Deployment JSON times and the `corral deployment` text, without a server."""

from __future__ import annotations

from typing import Any

import pytest

from app.cli.deployment import render_update
from app.cli.support.deployment_view import progress_deadline, render_list, render_status
from app.values.rfc3339 import ZERO_TIME, rfc3339

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("unix_ns", "text"),
    [
        (0, ZERO_TIME),
        (-5, ZERO_TIME),
        (1, "1970-01-01T00:00:00.000000001Z"),
        (1_700_000_000_000_000_000, "2023-11-14T22:13:20Z"),
        (1_700_000_000_100_000_000, "2023-11-14T22:13:20.1Z"),
        (1_700_000_000_123_456_000, "2023-11-14T22:13:20.123456Z"),
    ],
)
def test_rfc3339_is_gos_time_json(unix_ns: int, text: str) -> None:
    assert rfc3339(unix_ns) == text


def deployment(**fields: Any) -> Any:  # a deployment with the keys the output reads
    return {
        "ID": "0b23b149-6c2a-4f0a-9a3e-8e0e2f1d2c3b",
        "JobID": "web",
        "JobVersion": 3,
        "Status": "running",
        "StatusDescription": "Deployment is running but requires manual promotion",
        "TaskGroups": {},
        **fields,
    }


@pytest.mark.parametrize(
    ("status", "group", "shown"),
    [
        ("running", {"ProgressDeadline": 0, "RequireProgressBy": ZERO_TIME}, "N/A"),
        ("running", {"ProgressDeadline": 5, "RequireProgressBy": ZERO_TIME}, "TBD"),
        ("running", {"ProgressDeadline": 5}, "TBD"),
        ("running", {"ProgressDeadline": 5, "RequireProgressBy": "2023-11-14T22:13:20.5Z"}, "2023-11-14T22:13:20Z"),
        ("paused", {"ProgressDeadline": 5, "RequireProgressBy": "2023-11-14T22:13:20Z"}, "N/A"),
        ("successful", {"ProgressDeadline": 5, "RequireProgressBy": "2023-11-14T22:13:20Z"}, "N/A"),
    ],
)
def test_progress_deadline_column(status: str, group: Any, shown: str) -> None:
    assert progress_deadline(deployment(Status=status), group) == shown


def test_status_without_groups_prints_only_the_header() -> None:
    assert render_status(deployment()) == (
        "ID          = 0b23b149\n"
        "Job ID      = web\n"
        "Job Version = 3\n"
        "Status      = running\n"
        "Description = Deployment is running but requires manual promotion"
    )


def test_status_columns_line_up_and_promoted_is_na_without_canaries() -> None:
    groups = {
        "cache-with-a-long-name": {"DesiredTotal": 10, "DesiredCanaries": 2, "Promoted": True, "PlacedAllocs": 12},
        "db": {"DesiredTotal": 1, "AutoRevert": True},
    }
    lines = render_status(deployment(TaskGroups=groups), verbose=True).splitlines()
    assert lines[0] == "ID          = 0b23b149-6c2a-4f0a-9a3e-8e0e2f1d2c3b"
    header, cache, db = lines[-3:]
    assert lines[-4] == "Deployed"
    assert cache.split() == ["cache-with-a-long-name", "false", "true", "10", "2", "12", "0", "0", "N/A"]
    assert db.split() == ["db", "true", "N/A", "1", "0", "0", "0", "0", "N/A"]
    for column in ("Auto Revert", "Promoted", "Desired", "Canaries", "Placed", "Healthy", "Unhealthy"):
        start = header.index(column)
        assert cache[start] != " " and db[start] != " ", column
        assert cache[start - 1] == db[start - 1] == " ", column


def test_list_and_update_texts() -> None:
    assert render_list([]) == "No deployments found"
    text = render_list([deployment(), deployment(ID="ffffffff-0000-0000-0000-000000000000", Status="failed")])
    assert [line.split()[0] for line in text.splitlines()] == ["ID", "0b23b149", "ffffffff"]
    paused: Any = {"EvalID": "", "RevertedJobVersion": None}  # the keys render_update reads
    failed: Any = {"EvalID": "e", "RevertedJobVersion": 0}
    assert render_update("Deployment x paused", paused) == "Deployment x paused"
    assert render_update("Deployment x failed", failed) == (
        "Deployment x failed\nJob reverted to version 0 (the latest stable version)\nEvaluation ID: e"
    )
