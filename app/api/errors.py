"""Every error is JSON (RFC 9457 problem details) naming the field and the problem."""

from __future__ import annotations

import structlog
from flask import Flask, Response, jsonify
from werkzeug.exceptions import HTTPException

from app.errors import CorralError, FieldProblem

log = structlog.get_logger(__name__)


def problem(status: int, title: str, problems: list[FieldProblem]) -> Response:
    detail = "; ".join(f"{p.field}: {p.message}" if p.field else p.message for p in problems)
    response = jsonify(
        type="about:blank",
        title=title,
        status=status,
        detail=detail,
        errors=[{"field": p.field, "message": p.message} for p in problems],
    )
    response.status_code = status
    response.content_type = "application/problem+json"
    return response


def install(app: Flask) -> None:
    @app.errorhandler(CorralError)
    def _domain(err: CorralError) -> Response:
        return problem(err.status, type(err).__name__, err.problems)

    @app.errorhandler(HTTPException)
    def _http(err: HTTPException) -> Response:
        status = err.code or 500
        return problem(status, err.name, [FieldProblem("", err.description or err.name)])

    @app.errorhandler(Exception)
    def _bug(err: Exception) -> Response:
        log.exception("unhandled error", error=str(err))
        return problem(500, "Internal Server Error", [FieldProblem("", "internal error; see the server log")])
