"""/v1/agent: health and self-description."""

from __future__ import annotations

import os
import platform
import sys
import time

import psycopg
from flask import Blueprint, Response, current_app, request
from sqlalchemy.exc import SQLAlchemyError

from app.api.http.context import client_lane, respond, state
from app.api.routes.client.local_client import host_addresses
from app.api.routes.cluster.agent_config import agent_config
from app.db.engines import autocommitted
from app.db.schema import current_revision, head_revision
from app.db.state_index import current_index
from app.store.node import nodes as node_store
from app.store.sql import psycopg_query
from app.values.errors import InvalidInput

bp = Blueprint("agent", __name__)
VERSION = "0.1.0"


@bp.get("/agent/health")
@client_lane
def health() -> Response:
    """Nomad's agent health: `?type=server` and `?type=client`, the latter answered for the client
    that runs on this server's host (an API server is never a client itself). Without `type`,
    as Nomad's agent answers for every part it runs: the server, and the client when one runs on
    this host. Probes, load balancers and fleets poll it hard, so whether one runs is looked up
    at most every LOCAL_CLIENT_RECHECK_S in each process and the server part costs no transaction."""
    kinds = request.args.getlist("type") or (["server", "client"] if _local_client_runs() else ["server"])
    unknown = sorted(set(kinds) - {"server", "client"})
    if unknown:
        raise InvalidInput.of("type", f"unknown health check type {unknown[0]!r}: use server or client")
    body: dict[str, dict[str, object]] = {}
    index = 0
    if "server" in kinds:
        body["server"], index = _server_health()
    if "client" in kinds:
        body["client"] = _client_health()
    healthy = all(part["ok"] for part in body.values())
    return respond(body, index, 200 if healthy else 500)


LOCAL_CLIENT_RECHECK_S = 5.0
_LOCAL_CLIENT_SEEN = "corral.local_client_seen"  # app extension: (monotonic time, whether one ran)


def _local_client_runs() -> bool:
    seen = current_app.extensions.get(_LOCAL_CLIENT_SEEN)
    now = time.monotonic()
    if isinstance(seen, tuple) and now - seen[0] < LOCAL_CLIENT_RECHECK_S:
        return bool(seen[1])
    try:
        with state().reads() as session, session.begin():
            runs = bool(node_store.ready_nodes_at(session, host_addresses()))
    except SQLAlchemyError:
        runs = False  # the server part reports the database; the client's is asked for by type
    current_app.extensions[_LOCAL_CLIENT_SEEN] = (now, runs)
    return runs


def _server_health() -> tuple[dict[str, object], int]:
    """Whether this server reaches its database, in two round trips on the client pool (the
    checkout's ping and one autocommitted statement)."""
    try:
        with autocommitted(state().client_engine) as pg:
            row = pg.execute(psycopg_query("read_latest"), prepare=True).fetchone()
    except (SQLAlchemyError, psycopg.Error) as err:
        return {"ok": False, "message": f"database unreachable: {err.__class__.__name__}"}, 0
    return {"ok": True, "message": "ok"}, int(str(row[0])) if row else 0


def _client_health() -> dict[str, object]:
    """Nomad's answer for an agent whose client is up ("ok") or absent ("client not enabled"):
    here, whether a ready client advertises an address of this host (see local_client)."""
    try:
        with state().reads() as session, session.begin():
            found = node_store.ready_nodes_at(session, host_addresses())
    except SQLAlchemyError as err:
        return {"ok": False, "message": f"database unreachable: {err.__class__.__name__}"}
    if not found:
        return {"ok": False, "message": "client not enabled: no ready client runs on this server's host"}
    return {"ok": True, "message": "ok"}


@bp.get("/agent/self")
def self_() -> Response:
    current = state()
    with current.reads() as session, session.begin():
        index = current_index(session, ["_global"])
    body = {
        "config": {
            **agent_config(current.settings),
            "Version": {"Version": VERSION, "Product": "corral"},
            "BindAddr": current.settings.bind,
            "Database": {
                "Embedded": current.settings.database_url is None or current.settings.database_embedded,
                "SchemaRevision": current_revision(current.engine),
                "SchemaHead": head_revision(),
            },
        },
        "member": _member(current.settings.bind),
        "stats": _stats(index),
    }
    return respond(body, index)


def _member(bind: str) -> dict[str, object]:
    """Nomad's AgentMember: the API's bind address stands for the gossip address."""
    host, _, port = bind.rpartition(":")
    return {
        "Name": "corral",
        "Addr": host,
        "Port": int(port) if port.isdigit() and int(port) < 2**16 else 0,
        "Tags": {"role": "server", "build": VERSION},
        "Status": "alive",
    }


def _stats(index: int) -> dict[str, dict[str, str]]:
    """Nomad's stats: sections of string values (`nomad`, `runtime`; corral has no raft or
    serf section, its consensus is the database's)."""
    return {
        "nomad": {"server": "true", "leader": "true", "known_regions": "1", "state_index": str(index)},
        "runtime": {
            "arch": platform.machine(),
            "cpu_count": str(os.cpu_count() or 0),
            "kernel.name": sys.platform,
            "version": f"python{platform.python_version()}",
        },
    }
