"""Which client is "local" to an API server, for the routes Nomad answers from the agent the
request reaches when no node is named (`/v1/client/stats` without `node_id`).

An API server is never a client itself, but a client may run on its host (`corral agent -dev`
always runs one). The local client is the one ready node whose client advertises its HTTP API on
one of this host's addresses (loopback included). None, or several (a fleet simulator, two
clients on one host), is a 400 naming `node_id`, as a Nomad server without a client answers."""

from __future__ import annotations

import socket
import uuid

import psutil

from app.api.http.context import state
from app.store.node import nodes as node_store
from app.values.errors import InvalidInput

NO_LOCAL_NODE = "No local Node and node_id not provided"  # Nomad's answer


def host_addresses() -> list[str]:
    """Every IPv4 and IPv6 address of this host's interfaces (an IPv6 zone left out)."""
    found = {"127.0.0.1", "::1"}
    for addresses in psutil.net_if_addrs().values():
        for address in addresses:
            if address.family in (socket.AF_INET, socket.AF_INET6):
                found.add(address.address.partition("%")[0])
    return sorted(found)


def local_node_id() -> uuid.UUID:
    with state().reads() as session, session.begin():
        nodes = node_store.ready_nodes_at(session, host_addresses())
        found = [(node.id, node.name) for node in nodes]
    if not found:
        raise InvalidInput.of("node_id", f"{NO_LOCAL_NODE}: no ready client runs on this server's host")
    if len(found) > 1:
        names = ", ".join(name for _, name in found[:5])
        raise InvalidInput.of(
            "node_id", f"{NO_LOCAL_NODE}: {len(found)} ready clients run on this server's host ({names}); name one"
        )
    return found[0][0]
