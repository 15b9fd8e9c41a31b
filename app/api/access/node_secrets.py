"""Callers that prove who they are with a node's SecretID rather than an ACL token: the node
itself on the client protocol, a node registering again, a client reading its own allocation."""

from __future__ import annotations

import uuid

from flask import g, request
from sqlalchemy import select

from app.api.access.callers import Denied, expired, presented_token
from app.api.http.context import state
from app.api.http.params import peek_json_body
from app.models import Allocation, Node
from app.store import acl as acl_store
from app.values.ids import secret_matches


def check_node_secret() -> None:
    """The node's own secret (or a management token) for the node in the path."""
    secret = presented_token()
    if not secret:
        raise Denied()
    raw = (request.view_args or {}).get("node_id", "")
    try:
        node_id = uuid.UUID(str(raw))
    except ValueError:
        return  # the route answers 400 for a malformed ID
    with state().reads() as session, session.begin():
        stored = session.scalar(select(Node.secret_hash).where(Node.id == node_id))
        if secret_matches(secret, stored):
            g.corral_accessor = f"node:{node_id}"
            return
        token = acl_store.resolve(session, secret)
    if token is not None and token.token.type == "management" and not expired(token.token.expiration_time):
        g.corral_accessor = str(token.token.accessor_id)
        return
    if stored is None and token is None:
        return  # unknown node: the route answers 404/403 as it does without ACLs
    raise Denied()


def known_node_reregisters() -> bool:
    """A node registering again with its own SecretID in the body."""
    body = peek_json_body()
    node = body.get("Node") if isinstance(body, dict) else None
    secret = node.get("SecretID") if isinstance(node, dict) else None
    if not isinstance(node, dict) or not isinstance(secret, str) or not secret:
        return False
    try:
        node_id = uuid.UUID(str(node.get("ID")))
    except ValueError:
        return False
    with state().reads() as session, session.begin():
        stored = session.scalar(select(Node.secret_hash).where(Node.id == node_id))
    if not secret_matches(secret, stored):
        return False
    g.corral_accessor = f"node:{node_id}"
    return True


def node_owns_allocation(alloc_id: uuid.UUID | None) -> bool:
    """A client reading `alloc_id` (the allocation in the path), placed on its own node, with
    the node's secret."""
    secret = presented_token()
    if not secret or alloc_id is None:
        return False
    with state().reads() as session, session.begin():
        stored = session.scalar(
            select(Node.secret_hash).join(Allocation, Allocation.node_id == Node.id).where(Allocation.id == alloc_id)
        )
    if not secret_matches(secret, stored):
        return False
    g.corral_accessor = "node"
    return True
