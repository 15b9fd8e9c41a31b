"""Forwarding Nomad's client routes to the client agent that can answer them: the node running
the allocation (or the node named), at its advertised HTTPAddr, with a request signed by the
node's link key (app/acl/client_link.py). Only answers the client signed are relayed, and
nothing of them is served as the node sent it: the routes build their answers (JSON re-encoded,
files as bytes), so a node never chooses what the API's origin serves.

Only a ready node is asked (it registered, with an introduction token when ACLs are on, and
heartbeats with its secret). A node's answer is read with a size cap (Content-Length, then
while reading) and a deadline for the whole of it. Every failure, whatever it was (refused,
timed out, unsigned, too big, too slow), answers the caller with one 502 naming the node and
its address, no sooner than FAILURE_FLOOR_S after the request began: the caller cannot tell a
closed port from a filtered one or from some other service. The reason is in the server's log.
Every forwarded request is logged with the caller's accessor."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx
import structlog
from flask import Response, g, request

from app.acl import client_link as link
from app.api.http.context import state
from app.api.http.errors import problem
from app.models import Node
from app.store import allocs as alloc_store
from app.store.node import nodes as node_store
from app.values.errors import FieldProblem, NotFound

log = structlog.get_logger(__name__)
CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 10.0  # the longest pause between two pieces of an answer
FAILURE_FLOOR_S = CONNECT_TIMEOUT_S  # a refused connection answers when a filtered one would


@dataclass(frozen=True)
class Target:
    """Where a proxied request goes, and the key it is signed with."""

    node_id: uuid.UUID
    address: str
    key: bytes

    @property
    def where(self) -> str:
        return f"the client of node {self.node_id} at {self.address}"


@dataclass(frozen=True)
class Relayed:
    """A signed answer from the client: its status and body (its headers are not kept)."""

    status: int
    body: bytes


@dataclass(frozen=True)
class Limits:
    """How much of a node's answer is read, and for how long."""

    max_bytes: int
    timeout_s: float

    @classmethod
    def of_settings(cls) -> Limits:
        settings = state().settings
        return cls(settings.link_max_answer_bytes, settings.link_answer_timeout_s)


class Unreachable(Exception):
    """The client gave no valid answer; `response` is the problem to send the caller."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


class _NoAnswer(Exception):
    """Why a node's answer was not taken (for the server's log, never the caller)."""


def no_valid_answer(target: Target, began: float, reason: str) -> Unreachable:
    """The one failure a caller sees, after the floor; `reason` goes to the server's log."""
    log.warning("client answer not relayed", node_id=str(target.node_id), address=target.address, reason=reason)
    time.sleep(max(0.0, began + FAILURE_FLOOR_S - time.monotonic()))
    return Unreachable(problem(502, "Bad Gateway", [FieldProblem("", f"{target.where} gave no valid answer")]))


def _target(node: Node, field: str, alloc_id: uuid.UUID | None) -> Target:
    whose = f"node {node.id}" + (f" of allocation {alloc_id}" if alloc_id else "")
    if not node.http_addr or link.http_addr_problem(node.http_addr) is not None:
        raise NotFound.of(field, f"{whose} has no usable client HTTP address")
    if node.status != "ready":
        detail = f"{whose} is {node.status}: the servers forward only to ready clients"
        raise Unreachable(problem(502, "Bad Gateway", [FieldProblem("", detail)]))
    found = Target(node.id, node.http_addr, link.key_bytes(link.node_key(state().link_secret, node.id)))
    _audit(found, alloc_id)
    return found


def _audit(target: Target, alloc_id: uuid.UUID | None) -> None:
    """Who asked a client for what: an exec, a signal or a log read leaves a line on the server."""
    log.info(
        "client request forwarded",
        accessor=g.get("corral_accessor") or "anonymous",
        method=request.method,
        path=request.path,
        node_id=str(target.node_id),
        alloc_id=str(alloc_id) if alloc_id else None,
    )


def target_of_alloc(alloc_id: uuid.UUID) -> Target:
    """The client running the allocation; NotFound naming AllocID if there is none to ask."""
    with state().reads() as session, session.begin():
        alloc = alloc_store.get_allocation(session, alloc_id)
        node = node_store.get_node(session, alloc.node_id)
        return _target(node, "AllocID", alloc_id)


def target_of_node(node_id: uuid.UUID) -> Target:
    with state().reads() as session, session.begin():
        return _target(node_store.get_node(session, node_id), "node_id", None)


def _read_answer(reply: httpx.Response, limits: Limits, deadline: float) -> bytes:
    declared = reply.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_bytes:
        raise _NoAnswer(f"the answer declares {declared} bytes, over {limits.max_bytes}")
    pieces, size = [], 0
    for piece in reply.iter_raw():
        size += len(piece)
        if size > limits.max_bytes:
            raise _NoAnswer(f"the answer grew over {limits.max_bytes} bytes")
        if time.monotonic() > deadline:
            raise _NoAnswer(f"the answer took longer than {limits.timeout_s:g}s")
        pieces.append(piece)
    return b"".join(pieces)


def _exchange(target: Target, method: str, path: str, query: dict[str, str], headers: dict[str, str]) -> Relayed:
    limits = Limits.of_settings()
    deadline = time.monotonic() + limits.timeout_s
    timeout = httpx.Timeout(min(READ_TIMEOUT_S, limits.timeout_s), connect=min(CONNECT_TIMEOUT_S, limits.timeout_s))
    url = link.base_url(target.address) + path
    try:
        with httpx.stream(method, url, params=query, headers=headers, timeout=timeout) as reply:
            body = _read_answer(reply, limits, deadline)
            if not _signed(target, headers, reply, body):
                raise _NoAnswer("the answer carries no valid proof of the node's client")
            return Relayed(reply.status_code, body)
    except httpx.HTTPError as err:
        raise _NoAnswer(f"{type(err).__name__}: {err}") from None


def _signed(target: Target, sent: dict[str, str], reply: httpx.Response, body: bytes) -> bool:
    offered = reply.headers.get(link.PROOF_HEADER, "")
    return link.verify_response(target.key, sent[link.PROOF_HEADER], reply.status_code, body, offered)


def forward(target: Target, method: str, path: str, query: dict[str, str]) -> Relayed:
    """One signed request to the client; Unreachable (502 naming the node and its address) when
    no signed answer within the limits comes back."""
    began = time.monotonic()
    query = {k: v for k, v in query.items() if v != ""}  # as the proof covers it (canonical_query)
    if method != "GET":
        query["nonce"] = uuid.uuid4().hex  # the client acts once per proof: two acts, two proofs
    stamp = int(time.time())
    proof = link.request_proof(target.key, method, path, query, stamp)
    headers = {link.PROOF_HEADER: proof, link.TIME_HEADER: str(stamp)}
    try:
        return _exchange(target, method, path, query, headers)
    except _NoAnswer as err:
        raise no_valid_answer(target, began, str(err)) from None


def relay_failure(answer: Relayed) -> Response:
    """A client's refusal (4xx/5xx) in the server's problem format, fields as the client named them."""
    if not 400 <= answer.status < 600:
        return problem(502, "Bad Gateway", [FieldProblem("", f"the client answered with status {answer.status}")])
    try:
        errors = json.loads(answer.body).get("errors") or []
        problems = [FieldProblem(str(e.get("field", "")), str(e.get("message", ""))) for e in errors]
    except (ValueError, AttributeError, RecursionError):
        problems = [FieldProblem("", answer.body.decode("utf-8", "replace")[:500])]
    try:
        title = HTTPStatus(answer.status).phrase
    except ValueError:
        title = "Error"
    return problem(answer.status, title, problems)


def parsed_json(answer: Relayed, target: Target) -> Any:
    """The client's JSON answer as a value; Unreachable (502 naming the node) when it is not JSON."""
    try:
        return json.loads(answer.body, parse_constant=_no_constant)
    except (ValueError, RecursionError):  # a node's JSON nested too deeply is no answer either
        detail = f"{target.where} answered with something that is not JSON"
        raise Unreachable(problem(502, "Bad Gateway", [FieldProblem("", detail)])) from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def relay_json(answer: Relayed, target: Target) -> Response:
    """The client's JSON answer parsed and encoded again by the server (application/json,
    whatever the node said it was), or its refusal as a problem."""
    if answer.status != 200:
        return relay_failure(answer)
    return Response(json.dumps(parsed_json(answer, target)), status=200, content_type="application/json")
