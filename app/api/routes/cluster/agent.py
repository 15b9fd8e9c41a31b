"""/v1/agent: health and self-description."""

from __future__ import annotations

import os
import platform
import sys

import psycopg
from flask import Blueprint, Response
from sqlalchemy.exc import SQLAlchemyError

from app.api.http.context import client_lane, respond, state
from app.api.routes.cluster.agent_config import agent_config
from app.db.engines import autocommitted
from app.db.schema import current_revision, head_revision
from app.db.state_index import current_index
from app.store.sql import psycopg_query

bp = Blueprint("agent", __name__)
VERSION = "0.1.0"


@bp.get("/agent/health")
@client_lane
def health() -> Response:
    """Whether this server reaches its database, in two round trips on the client pool (the
    checkout's ping and one autocommitted statement): probes, load balancers and fleets poll it,
    so it costs no transaction."""
    try:
        with autocommitted(state().client_engine) as pg:
            row = pg.execute(psycopg_query("read_latest"), prepare=True).fetchone()
    except (SQLAlchemyError, psycopg.Error) as err:
        return respond({"server": {"ok": False, "message": f"database unreachable: {err.__class__.__name__}"}}, 0, 500)
    return respond({"server": {"ok": True, "message": "ok"}}, int(str(row[0])) if row else 0)


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
