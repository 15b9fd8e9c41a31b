"""/v1/agent: health and self-description."""

from __future__ import annotations

import psycopg
from flask import Blueprint, Response
from sqlalchemy.exc import SQLAlchemyError

from app.api.context import client_lane, respond, state
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
            "Version": {"Version": VERSION, "Product": "corral"},
            "Server": {"Enabled": True},
            "Client": {"Enabled": False},
            "BindAddr": current.settings.bind,
            "Database": {
                "Embedded": current.settings.database_url is None or current.settings.database_embedded,
                "SchemaRevision": current_revision(current.engine),
                "SchemaHead": head_revision(),
            },
        },
        "member": {"Name": "corral", "Status": "alive", "Tags": {"role": "server", "build": VERSION}},
        "stats": {"state_index": index},
    }
    return respond(body, index)
