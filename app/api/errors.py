"""Every error is JSON (RFC 9457 problem details) naming the field and the problem."""

from __future__ import annotations

import psycopg
import structlog
from flask import Flask, Response, jsonify
from psycopg import errors as pg_errors
from sqlalchemy import exc as sa_exc
from werkzeug.exceptions import HTTPException

from app.errors import CorralError, FieldProblem

log = structlog.get_logger(__name__)
# A lock or statement timeout means the database is busy, not that the request is wrong.
BUSY_ERRORS = (pg_errors.LockNotAvailable, pg_errors.QueryCanceled)
RETRY_AFTER_S = 1


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

    @app.errorhandler(sa_exc.TimeoutError)
    def _pool_exhausted(err: sa_exc.TimeoutError) -> Response:
        log.warning("no database connection free in time", error=str(err).splitlines()[0])
        return busy("every database connection of this server is in use; retry")

    @app.errorhandler(TimeoutError)
    def _slow_body(err: TimeoutError) -> Response:
        # The socket's read timeout (http_body_timeout_s) expired while the body was read.
        return problem(408, "Request Timeout", [FieldProblem("", "the request body stopped arriving; send it again")])

    @app.errorhandler(sa_exc.DBAPIError)
    def _database(err: sa_exc.DBAPIError) -> Response:
        return _database_problem(err.orig, err)

    @app.errorhandler(psycopg.Error)
    def _driver(err: psycopg.Error) -> Response:
        return _database_problem(err, err)

    @app.errorhandler(Exception)
    def _bug(err: Exception) -> Response:
        return _internal(err)


def busy(message: str) -> Response:
    response = problem(503, "Service Unavailable", [FieldProblem("", message)])
    response.headers["Retry-After"] = str(RETRY_AFTER_S)
    return response


def _database_problem(orig: BaseException | None, err: Exception) -> Response:
    """A backstop: input validation should have caught bad values before the database did."""
    if isinstance(orig, BUSY_ERRORS):
        log.warning("database busy", error=str(orig))
        return busy("the database is busy (lock or statement timeout); retry")
    if isinstance(orig, psycopg.DataError):
        # Worth a warning: some validation let through what the database refused.
        log.warning("database refused input", error=str(orig))
        return problem(400, "Bad Request", [FieldProblem("", f"invalid input: {_primary_message(orig)}")])
    return _internal(err)


def _primary_message(err: psycopg.Error) -> str:
    message = err.diag.message_primary if err.diag is not None else None
    return message or str(err).splitlines()[0]


def _internal(err: Exception) -> Response:
    log.exception("unhandled error", error=str(err))
    return problem(500, "Internal Server Error", [FieldProblem("", "internal error; see the server log")])
