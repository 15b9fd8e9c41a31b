"""Small builders for API job payloads, so each test states only what it is about."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import FieldError, JobSpecError, normalize_job


def task(**fields: Any) -> dict[str, Any]:
    return {"Name": "server", "Driver": "docker", **fields}


def group(**fields: Any) -> dict[str, Any]:
    return {"Name": "web", "Tasks": [task()], **fields}


def job(**fields: Any) -> dict[str, Any]:
    return {"ID": "example", "TaskGroups": [group()], **fields}


def errors_of(payload: object) -> list[FieldError]:
    with pytest.raises(JobSpecError) as caught:
        normalize_job(payload)
    return caught.value.errors


def messages_at(payload: object, path: str) -> list[str]:
    """Messages reported for exactly ``path``; fails if there are none."""
    errors = errors_of(payload)
    found = [error.message for error in errors if error.field == path]
    assert found, f"no error at {path}; got {errors}"
    return found
