"""Forwarding Nomad's client routes to the client agent that can answer them: the node running
the allocation (or the node named), at its advertised HTTPAddr, with a request signed by the
node's key (app/acl/client_link.py). Only answers the client signed are relayed.

A client that cannot be reached answers quickly: the connection gets CONNECT_TIMEOUT_S, so a
down node costs a caller (and a server greenlet) seconds, not the whole read timeout."""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from http import HTTPStatus

import httpx
from flask import Response

from app.acl import client_link as link
from app.api.context import state
from app.api.errors import problem
from app.errors import FieldProblem, NotFound
from app.store import allocs as alloc_store
from app.store import nodes as node_store

CONNECT_TIMEOUT_S = 2.0
READ_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Target:
    """Where a proxied request goes, and the key it is signed with."""

    node_id: uuid.UUID
    address: str
    key: bytes


@dataclass(frozen=True)
class Relayed:
    """A signed answer from the client: its status, body and content type."""

    status: int
    body: bytes
    content_type: str


class Unreachable(Exception):
    """The client gave no valid answer; `response` is the problem to send the caller."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status)
        self.response = response


def target_of_alloc(alloc_id: uuid.UUID) -> Target:
    """The client running the allocation; NotFound naming AllocID if there is none to ask."""
    with state().reads() as session, session.begin():
        alloc = alloc_store.get_allocation(session, alloc_id)
        node = node_store.get_node(session, alloc.node_id)
        found = Target(node.id, node.http_addr, link.key_from_hash(node.secret_hash))
    if not found.address or link.http_addr_problem(found.address) is not None:
        raise NotFound.of("AllocID", f"node {found.node_id} of allocation {alloc_id} has no usable client HTTP address")
    return found


def target_of_node(node_id: uuid.UUID) -> Target:
    with state().reads() as session, session.begin():
        node = node_store.get_node(session, node_id)
        found = Target(node.id, node.http_addr, link.key_from_hash(node.secret_hash))
    if not found.address or link.http_addr_problem(found.address) is not None:
        raise NotFound.of("node_id", f"node {node_id} has no usable client HTTP address")
    return found


def forward(target: Target, method: str, path: str, query: dict[str, str]) -> Relayed:
    """One signed request to the client; Unreachable (502, or 504 on a timeout) naming the node
    and its address when no signed answer comes back. One message for every other failure
    (refused, unsigned or forged reply): the caller learns nothing more about the network."""
    if method != "GET":
        query = {**query, "nonce": uuid.uuid4().hex}  # the client acts once per proof: two acts, two proofs
    stamp = int(time.time())
    proof = link.request_proof(target.key, method, path, query, stamp)
    headers = {link.PROOF_HEADER: proof, link.TIME_HEADER: str(stamp)}
    where = f"the client of node {target.node_id} at {target.address}"
    timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)
    try:
        reply = httpx.request(
            method, link.base_url(target.address) + path, params=query, headers=headers, timeout=timeout
        )
    except httpx.TimeoutException:
        raise Unreachable(
            problem(504, "Gateway Timeout", [FieldProblem("", f"{where} did not answer in time")])
        ) from None
    except httpx.HTTPError:
        reply = None
    if reply is None or not link.verify_response(
        target.key, proof, reply.status_code, reply.content, reply.headers.get(link.PROOF_HEADER, "")
    ):
        raise Unreachable(problem(502, "Bad Gateway", [FieldProblem("", f"{where} gave no valid answer")]))
    return Relayed(reply.status_code, reply.content, reply.headers.get("content-type", ""))


def relay_failure(answer: Relayed) -> Response:
    """A client's refusal (4xx/5xx) in the server's problem format, fields as the client named them."""
    try:
        errors = json.loads(answer.body).get("errors") or []
        problems = [FieldProblem(str(e.get("field", "")), str(e.get("message", ""))) for e in errors]
    except (ValueError, AttributeError):
        problems = [FieldProblem("", answer.body.decode("utf-8", "replace")[:500])]
    try:
        title = HTTPStatus(answer.status).phrase
    except ValueError:
        title = "Error"
    return problem(answer.status, title, problems)


def relay(answer: Relayed) -> Response:
    """The client's answer as it came (a success), or its refusal as a problem."""
    if answer.status != 200:
        return relay_failure(answer)
    return Response(answer.body, status=200, content_type=answer.content_type)
