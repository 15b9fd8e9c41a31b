"""Nomad's `alloc exec`: GET /v1/client/allocation/<id>/exec?task=&command=<JSON array>&tty=,
upgraded to a WebSocket that carries Nomad's exec frames (app/stream/exec_frames.py).

The request is checked here before anything is upgraded, so a bad one gets an ordinary 4xx
naming the field: the allocation (404), `task`, `command`, `tty`, the ACL (Nomad's alloc-exec,
and alloc-node-exec for a driver without filesystem isolation, raw_exec). The server then opens
a WebSocket of its own to the client running the allocation, signed like every proxied client
route (app/acl/client_link.py); the client's refusal (task not running …) is relayed as the
same 4xx before the caller's connection is upgraded. Once both sides are open, frames are
relayed unchanged in both directions until either side closes; closing one closes the other,
and the client kills the command when its side drops.

Only a gunicorn worker hands the route its socket (`gunicorn.socket`); the WebSocket then owns
the connection, and gunicorn is told to close it rather than write a response on it."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

import structlog
from flask import Blueprint, Response, g, request

from app.acl import client_link as link
from app.acl import policy as pol
from app.api.access import enforcement
from app.api.access.callers import Denied, caller, header_token
from app.api.http import ws_handshake
from app.api.http.client_proxy import (
    CONNECT_TIMEOUT_S,
    READ_TIMEOUT_S,
    Relayed,
    Target,
    Unreachable,
    no_valid_answer,
    relay_failure,
    target_of_alloc,
)
from app.api.http.context import state
from app.api.http.params import arg, uuid_value
from app.models import JobVersion
from app.store import allocs as alloc_store
from app.stream import websocket as wsock
from app.values.errors import CorralError, InvalidInput
from app.wire.job import JobSpec

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIEnvironment

log = structlog.get_logger(__name__)
bp = Blueprint("client_exec", __name__)
MAX_COMMAND_BYTES = 64 * 1024
# Drivers that run the command on the host, outside any filesystem isolation (Nomad's
# FSIsolationNone): exec into them is exec on the node, alloc-node-exec.
NO_FS_ISOLATION = frozenset({"raw_exec"})


def _unreachable(err: Unreachable) -> Response:
    return err.response


bp.register_error_handler(Unreachable, _unreachable)


@dataclass(frozen=True)
class ExecRequest:
    alloc_id: uuid.UUID
    namespace: str
    task: str
    driver: str
    command: list[str]
    tty: bool


def parse_command(raw: str | None) -> list[str]:
    """`command` as Nomad sends it: a JSON array of strings, not empty."""
    if not raw:
        raise InvalidInput.of("command", 'is required: a JSON array of strings, e.g. ["/bin/sh"]')
    if len(raw) > MAX_COMMAND_BYTES:
        raise InvalidInput.of("command", f"must be at most {MAX_COMMAND_BYTES} bytes")
    try:
        value = json.loads(raw)
    except (ValueError, RecursionError):  # nesting deep enough exhausts the parser's recursion
        raise InvalidInput.of("command", "must be a JSON array of strings") from None
    if not isinstance(value, list) or not all(isinstance(part, str) for part in value):
        raise InvalidInput.of("command", "must be a JSON array of strings")
    if not value or not value[0]:
        raise InvalidInput.of("command", "command is not present: the array must name a program first")
    return value


def parse_tty(raw: str | None) -> bool:
    if raw is None or raw == "":
        return False
    lowered = raw.lower()
    if lowered in ("true", "1", "t"):
        return True
    if lowered in ("false", "0", "f"):
        return False
    raise InvalidInput.of("tty", f"tty value is not a boolean, got {raw!r}")


def _tasks(spec: JobSpec, group: str) -> dict[str, str]:
    """Task name -> driver, for the allocation's task group."""
    groups = [g for g in spec.get("TaskGroups") or [] if isinstance(g, dict) and g.get("Name") == group]
    tasks = groups[0].get("Tasks") or [] if groups else []
    return {str(t.get("Name")): str(t.get("Driver") or "") for t in tasks if isinstance(t, dict)}


def exec_request(alloc_id: uuid.UUID) -> ExecRequest:
    command, tty = parse_command(arg("command")), parse_tty(arg("tty"))
    task = arg("task") or ""
    if not task:
        raise InvalidInput.of("task", "must provide a valid task name")
    with state().reads() as session, session.begin():
        alloc = alloc_store.get_allocation(session, alloc_id)
        version = session.get(JobVersion, (alloc.namespace, alloc.job_id, alloc.job_version))
        tasks = _tasks(version.spec if version is not None else {}, alloc.task_group)
        namespace = alloc.namespace
    if task not in tasks:
        raise InvalidInput.of("task", f"unknown task name {task!r}; the allocation has {', '.join(sorted(tasks))}")
    return ExecRequest(alloc_id, namespace, task, tasks[task], command, tty)


def node_exec_denied(wanted: ExecRequest) -> Response | None:
    """Nomad's second check: exec without filesystem isolation needs alloc-node-exec (the
    route's own requirement, alloc-exec, was checked before it ran). Refused as authz refuses."""
    if wanted.driver not in NO_FS_ISOLATION:
        return None
    if caller().acl.allow_namespace_op(wanted.namespace, pol.ALLOC_NODE_EXEC):
        return None
    log.warning("permission denied", path=request.path, reason="alloc-node-exec is required for raw_exec")
    return Response("Permission denied", status=403, content_type="text/plain; charset=utf-8")


def _client_socket() -> Any:
    headers = {name.lower(): value for name, value in request.headers.items()}
    sock = request.environ.get("gunicorn.socket")
    if not wsock.wants_upgrade(headers):
        raise InvalidInput.of("Upgrade", "alloc exec is a WebSocket: send Upgrade: websocket (version 13)")
    if sock is None:
        raise InvalidInput.of("Upgrade", "this server cannot upgrade connections (it runs outside gunicorn)")
    return sock


def open_link(target: Target, wanted: ExecRequest) -> wsock.Accepted | Response:
    """The WebSocket to the client running the allocation, or the problem to answer with: the
    client's signed refusal, or the one 502 of client_proxy for anything else."""
    began = time.monotonic()
    path = f"/v1/client/allocation/{wanted.alloc_id}/exec"
    query = {
        "task": wanted.task,
        "command": json.dumps(wanted.command),
        "tty": "true" if wanted.tty else "false",
        "nonce": uuid.uuid4().hex,  # an act: the client serves each proof once
    }
    stamp = int(time.time())
    proof = link.request_proof(target.key, "GET", path, query, stamp)
    url = link.base_url(target.address) + path + "?" + urlencode(query)
    try:
        answer = wsock.connect(
            url,
            {link.PROOF_HEADER: proof, link.TIME_HEADER: str(stamp)},
            timeout_s=CONNECT_TIMEOUT_S + READ_TIMEOUT_S,
        )
    except OSError as err:  # TimeoutError too
        return no_valid_answer(target, began, f"{type(err).__name__}: {err}").response
    if isinstance(answer, wsock.Refused):
        offered = answer.headers.get(link.PROOF_HEADER.lower(), "")
        if link.verify_response(target.key, proof, answer.status, answer.body, offered):
            return relay_failure(Relayed(answer.status, answer.body))
    else:
        offered = answer.headers.get(link.PROOF_HEADER.lower(), "")
        if link.verify_response(target.key, proof, 101, b"", offered):
            return answer
        answer.ws.sock.close()
    return no_valid_answer(target, began, "the answer carries no valid proof of the node's client").response


def pump(source: wsock.WebSocket, sink: wsock.WebSocket) -> None:
    """Every message from source to sink until source closes; then close sink with source's code."""
    while True:
        message = source.receive()
        if message is None:
            break
        try:
            sink.send(message)
        except wsock.Closed:
            break
    sink.close(source.close_code or wsock.NORMAL, source.close_reason)


def relay(outer: wsock.WebSocket, inner: wsock.WebSocket) -> None:
    """Both directions at once (under gevent a thread is a greenlet); returns when both ended.
    The client's side ends the session (after its `exited` frame, or when the caller's close
    reached it); the caller then gets READ_TIMEOUT_S to answer the close frame."""
    upstream = threading.Thread(target=pump, args=(outer, inner), name="exec-input", daemon=True)
    upstream.start()
    pump(inner, outer)
    upstream.join(READ_TIMEOUT_S)
    for sock in (inner.sock, outer.sock):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)  # wakes a reader still waiting on it
    inner.sock.close()
    upstream.join(1.0)


class Upgraded(Response):
    """What the route returns once the WebSocket is over: the connection belongs to no HTTP
    response any more, and StopIteration is how a gunicorn worker is told to close it."""

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        raise StopIteration()


# Two rules, one view: Werkzeug matches an Upgrade: websocket request only to a websocket rule,
# and a plain GET (refused with a 400 naming Upgrade, after the input checks) only to the other.
@bp.get("/client/allocation/<alloc_id>/exec", websocket=True)
@bp.get("/client/allocation/<alloc_id>/exec")
def alloc_exec(alloc_id: str) -> Response:
    if ws_handshake.parse_flag(arg("ws_handshake")):
        return exec_after_handshake(alloc_id)
    return serve_exec(exec_request(uuid_value(alloc_id, "AllocID")))


def serve_exec(wanted: ExecRequest) -> Response:
    """The checked request's session: the node-exec ACL check, the caller's upgrade, the link to
    the client, then the relay (also the session of a job action, app/api/routes/jobs/job_actions.py)."""
    denied = node_exec_denied(wanted)
    if denied is not None:
        return denied
    sock = _client_socket()
    opened = open_link(target_of_alloc(wanted.alloc_id), wanted)
    if isinstance(opened, Response):
        return opened
    key = request.headers.get("Sec-WebSocket-Key", "")
    try:
        sock.sendall(wsock.accept_response(key))
    except OSError:
        opened.ws.sock.close()
        return Upgraded()
    _log_session(wanted)
    relay(wsock.WebSocket.server(sock), opened.ws)
    return Upgraded()


def _log_session(wanted: ExecRequest) -> None:
    # Nomad logs each exec session with the token that opened it: an audit trail of commands.
    accessor = g.get("corral_accessor", "")
    log.info(
        "alloc exec session", alloc_id=str(wanted.alloc_id), task=wanted.task, command=wanted.command, accessor=accessor
    )


def exec_after_handshake(alloc_id: str) -> Response:
    """Nomad's ?ws_handshake=true, for browsers: upgrade first, read the token from the first
    frame, then make every check the header path makes before the upgrade, in the same order
    (ACL, then the input, then the client's own refusal). Once upgraded no HTTP answer may be
    written on the socket, so every refusal or failure is a close frame: 1008 with the reason,
    1011 when the client could not be reached or the server failed."""
    sock = _client_socket()
    try:
        sock.sendall(wsock.accept_response(request.headers.get("Sec-WebSocket-Key", "")))
    except OSError:
        return Upgraded()
    outer = wsock.WebSocket.server(sock)
    try:
        code, reason = _handshake_session(outer, alloc_id)
    except Exception:  # a database error too: it must not become an HTTP answer on the socket
        log.exception("alloc exec after a handshake failed", alloc_id=alloc_id)
        code, reason = wsock.INTERNAL_ERROR, "internal error"
    if code is not None:
        outer.close(code, reason)
    return Upgraded()


def _handshake_session(outer: wsock.WebSocket, alloc_id: str) -> tuple[int | None, str]:
    """Run the session; the close frame to send when it is refused, (None, "") once relayed."""
    try:
        token = ws_handshake.read_token(outer, header_token(), READ_TIMEOUT_S)
        enforcement.check_after_handshake(token)
        wanted = exec_request(uuid_value(alloc_id, "AllocID"))
        if node_exec_denied(wanted) is not None:
            raise Denied()
        opened = open_link(target_of_alloc(wanted.alloc_id), wanted)
    except ws_handshake.HandshakeError as err:
        return wsock.POLICY_VIOLATION, str(err)
    except Denied as denied:
        return wsock.POLICY_VIOLATION, denied.message
    except Unreachable as err:
        return _close_for(err.response)
    except CorralError as err:
        return wsock.POLICY_VIOLATION, str(err)
    if isinstance(opened, Response):
        return _close_for(opened)
    _log_session(wanted)
    relay(outer, opened.ws)
    return None, ""


def _close_for(refusal: Response) -> tuple[int, str]:
    code = wsock.INTERNAL_ERROR if refusal.status_code >= 500 else wsock.POLICY_VIOLATION
    return code, _reason(refusal)


def _reason(refusal: Response) -> str:
    """The message of a problem answer (its first error), for a close frame."""
    body = refusal.get_json(silent=True)
    errors = body.get("errors") if isinstance(body, dict) else None
    if isinstance(errors, list) and errors and isinstance(errors[0], dict):
        first = errors[0]
        return f"{first.get('field', '')}: {first.get('message', '')}".strip(": ")
    return refusal.get_data(as_text=True)[:120]
