"""The REST API under /v1, following Nomad's routes and JSON shapes."""

from __future__ import annotations

from flask import Flask

from app.api import agent, allocs, errors, evals, jobs, nodes, operator


def register(app: Flask) -> None:
    for module in (agent, jobs, evals, allocs, nodes, operator):
        app.register_blueprint(module.bp, url_prefix="/v1")
    errors.install(app)
