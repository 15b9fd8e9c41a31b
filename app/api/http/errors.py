"""Every error is JSON (RFC 9457 problem details) naming the field and the problem."""

from __future__ import annotations

import time

import psycopg
import structlog
from flask import Flask, Response, jsonify, request
from psycopg import errors as pg_errors
from sqlalchemy import exc as sa_exc
from werkzeug.exceptions import HTTPException

from app.api.http.client_turns import ClientTurnsFull
from app.values.errors import CorralError, FieldProblem

log = structlog.get_logger(__name__)
# A lock or statement timeout means the database is busy, not that the request is wrong.
BUSY_ERRORS = (pg_errors.LockNotAvailable, pg_errors.QueryCanceled)
# The server is down, restarting, in recovery, or the connection to it was cut.
UNAVAILABLE_ERRORS = (psycopg.OperationalError, psycopg.InterfaceError)
RETRY_AFTER_S = 1
UNAVAILABLE_RETRY_AFTER_S = 2
UNAVAILABLE = "the database is unavailable (down, restarting or unreachable); nothing was written; retry"
OUTCOME_UNKNOWN = (
    "the database connection was lost while the write was committing: it may or may not have been "
    "applied; read the object back before retrying"
)
LOG_EVERY_S = 5.0


REPLICATION_UNCONFIRMED = (
    "the write committed on the primary, but its synchronous standby did not confirm it before the "
    "statement timeout: it is lost if the primary fails before the standby catches up; read the "
    "object back before retrying"
)


class CommitOutcomeUnknown(Exception):
    """The connection dropped during COMMIT: the transaction may have committed or not."""

    detail = OUTCOME_UNKNOWN


class ReplicationUnconfirmed(CommitOutcomeUnknown):
    """COMMIT's wait for the synchronous standby was cancelled (statement_timeout): committed on
    the primary only, which a failover may lose, so the client is not told it succeeded."""

    detail = REPLICATION_UNCONFIRMED


def database_unavailable(err: BaseException) -> bool:
    """Whether an error means the database could not be reached (rather than refused the request)."""
    if isinstance(err, sa_exc.DBAPIError):
        if err.connection_invalidated:
            return True
        err = err.orig if err.orig is not None else err
    return isinstance(err, UNAVAILABLE_ERRORS) and not isinstance(err, BUSY_ERRORS)


class _Throttled:
    """One warning per LOG_EVERY_S while the database stays away, not one per request."""

    def __init__(self) -> None:
        self._last = 0.0
        self._suppressed = 0

    def warning(self, message: str, **fields: object) -> None:
        now = time.monotonic()
        if now - self._last < LOG_EVERY_S:
            self._suppressed += 1
            return
        log.warning(message, suppressed=self._suppressed, **fields)
        self._last, self._suppressed = now, 0


_unavailable_log = _Throttled()


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
        if status == 404 and request.url_rule is None:
            # No route matched: name the path, as the job sub-route 404s do.
            return problem(
                status, err.name, [FieldProblem("URL", f"no route {request.method} {request.path} in corral")]
            )
        return problem(status, err.name, [FieldProblem("", err.description or err.name)])

    @app.errorhandler(sa_exc.TimeoutError)
    def _pool_exhausted(err: sa_exc.TimeoutError) -> Response:
        log.warning("no database connection free in time", error=str(err).splitlines()[0])
        return busy("every database connection of this server is in use; retry")

    @app.errorhandler(TimeoutError)
    def _slow_body(err: TimeoutError) -> Response:
        # The socket's read timeout (http_body_timeout_s) expired while the body was read.
        return problem(408, "Request Timeout", [FieldProblem("", "the request body stopped arriving; send it again")])

    @app.errorhandler(RecursionError)
    def _too_deep(err: RecursionError) -> Response:
        # A backstop: every body goes through params.json_body(), which names the problem; a
        # parse of some other input nested beyond the interpreter's recursion limit lands here.
        log.warning("input nested too deeply to read", path=request.path, error=str(err))
        return problem(400, "Bad Request", [FieldProblem("", "the request is nested too deeply to read")])

    @app.errorhandler(CommitOutcomeUnknown)
    def _outcome_unknown(err: CommitOutcomeUnknown) -> Response:
        log.warning("commit outcome unknown", error=str(err.__cause__ or err))
        return busy(err.detail, title="Commit Outcome Unknown", retry_after_s=UNAVAILABLE_RETRY_AFTER_S)

    @app.errorhandler(ClientTurnsFull)
    def _client_turns_full(err: ClientTurnsFull) -> Response:
        return busy(str(err))

    @app.errorhandler(sa_exc.DBAPIError)
    def _database(err: sa_exc.DBAPIError) -> Response:
        return _database_problem(err.orig, err)

    @app.errorhandler(psycopg.Error)
    def _driver(err: psycopg.Error) -> Response:
        return _database_problem(err, err)

    @app.errorhandler(Exception)
    def _bug(err: Exception) -> Response:
        return _internal(err)


def busy(message: str, title: str = "Service Unavailable", retry_after_s: int = RETRY_AFTER_S) -> Response:
    response = problem(503, title, [FieldProblem("", message)])
    response.headers["Retry-After"] = str(retry_after_s)
    return response


def _database_problem(orig: BaseException | None, err: Exception) -> Response:
    """A backstop: input validation should have caught bad values before the database did."""
    if isinstance(orig, BUSY_ERRORS):
        log.warning("database busy", error=str(orig))
        return busy("the database is busy (lock or statement timeout); retry")
    if database_unavailable(err) or (orig is not None and database_unavailable(orig)):
        _unavailable_log.warning("database unavailable; answering 503", error=_first_line(orig or err))
        return busy(UNAVAILABLE, title="Database Unavailable", retry_after_s=UNAVAILABLE_RETRY_AFTER_S)
    if isinstance(orig, psycopg.DataError):
        # Worth a warning: some validation let through what the database refused.
        log.warning("database refused input", error=str(orig))
        return problem(400, "Bad Request", [FieldProblem("", f"invalid input: {_primary_message(orig)}")])
    return _internal(err)


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def _primary_message(err: psycopg.Error) -> str:
    message = err.diag.message_primary if err.diag is not None else None
    return message or str(err).splitlines()[0]


def _internal(err: Exception) -> Response:
    log.exception("unhandled error", error=str(err))
    return problem(500, "Internal Server Error", [FieldProblem("", "internal error; see the server log")])
