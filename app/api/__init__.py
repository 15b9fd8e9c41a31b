"""The REST API under /v1, following Nomad's routes and JSON shapes."""

from __future__ import annotations

from typing import Any

from flask import Flask

from app.api import agent, allocs, errors, evals, jobs, nodes, operator
from app.api.params import path_value

# How each URL path variable is named in error messages, as in Nomad's bodies.
PATH_FIELDS = {"job_id": "JobID", "node_id": "NodeID", "eval_id": "EvalID", "alloc_id": "AllocID"}


def register(app: Flask) -> None:
    for module in (agent, jobs, evals, allocs, nodes, operator):
        app.register_blueprint(module.bp, url_prefix="/v1")
    app.url_value_preprocessor(_check_path_values)
    errors.install(app)


def _check_path_values(endpoint: str | None, values: dict[str, Any] | None) -> None:
    """IDs in the URL path get the same checks as query parameters (no NUL characters)."""
    for name, value in (values or {}).items():
        if isinstance(value, str):
            path_value(value, PATH_FIELDS.get(name, name))
