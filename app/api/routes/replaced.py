"""Nomad routes for machinery corral does not have: Raft, autopilot, gossip and snapshots.
corral's state lives in PostgreSQL, so these jobs belong to the database (replication, failover,
backups) and every server is an equal front of it. Where Nomad's answer still means something it
is given from what corral has (the Raft configuration as the database's replication members);
otherwise a 501 names the replacement, so a tool learns what to do instead of seeing a 404."""

from __future__ import annotations

from typing import TypedDict

from flask import Blueprint, Response
from sqlalchemy import text
from sqlalchemy.orm import Session

from app.api.http.context import read, respond
from app.api.routes.cluster.status import server_address
from app.values.errors import DoneElsewhere

bp = Blueprint("replaced", __name__)

RAFT = (
    "corral has no Raft: its state lives in PostgreSQL, whose replication and failover replace it "
    "(promote a standby; the leader and applier roles move with their advisory locks). "
    "See docs/postgres-ha.md; GET /v1/operator/raft/configuration lists the database's members"
)
AUTOPILOT = (
    "corral has no autopilot: server health is GET /v1/agent/health on each server, and the "
    "database's replication state is GET /v1/operator/raft/configuration (docs/postgres-ha.md)"
)
SNAPSHOT = (
    "corral keeps its whole state in PostgreSQL: take a snapshot with pg_dump (or pg_basebackup) "
    "and restore it with pg_restore into a stopped cluster (docs/postgres-ha.md, Backups and point-in-time recovery)"
)
GOSSIP = (
    "corral servers do not gossip: every server reads the one database, so none joins, leaves or "
    "shares a gossip key; start or stop server processes (docs/operations.md)"
)
CLIENT_SERVERS = (
    "a corral node agent takes its server's address at start (`corral client --server`); they cannot be "
    "changed through the API"
)


STANDBYS = """
SELECT application_name, coalesce(client_addr::text, 'local'), coalesce(client_port, 0), sync_state
  FROM pg_stat_replication
 ORDER BY application_name
"""


class RaftServer(TypedDict):
    """Nomad's RaftServer, one per database member."""

    ID: str
    Node: str
    Address: str
    Leader: bool
    Voter: bool
    RaftProtocol: str


class RaftConfiguration(TypedDict):
    Servers: list[RaftServer]
    Index: int


def _members(session: Session) -> RaftConfiguration:
    """The primary (Leader) and each standby streaming from it; a synchronous standby votes,
    as it must confirm a commit, an asynchronous one does not."""
    primary = session.execute(text("SELECT inet_server_addr()::text, inet_server_port(), pg_is_in_recovery()")).one()
    host = (primary[0] or "local").split("/")[0]
    address = f"{host}:{primary[1] or 0}"
    servers = [
        RaftServer(
            ID=address, Node="postgres-primary", Address=address, Leader=not primary[2], Voter=True, RaftProtocol="3"
        )
    ]
    standbys = session.execute(text(STANDBYS)).all()
    for name, client, port, sync_state in standbys:
        standby = f"{client.split('/')[0]}:{port}"
        voter = sync_state in ("sync", "quorum")
        servers.append(
            RaftServer(ID=standby, Node=name or "standby", Address=standby, Leader=False, Voter=voter, RaftProtocol="3")
        )
    return RaftConfiguration(Servers=servers, Index=0)


@bp.get("/operator/raft/configuration")
def raft_configuration() -> Response:
    """Nomad's Raft peers are corral's database members: the primary and its standbys."""
    body, index = read(["_global"], _members)
    return respond(body, index)


@bp.route("/operator/raft/peer", methods=["DELETE"])
@bp.route("/operator/raft/transfer-leadership", methods=["PUT", "POST"])
def raft_change() -> Response:
    raise DoneElsewhere.of("Raft", RAFT)


@bp.route("/operator/autopilot/configuration", methods=["GET", "PUT", "POST"])
@bp.get("/operator/autopilot/health")
def autopilot() -> Response:
    raise DoneElsewhere.of("Autopilot", AUTOPILOT)


@bp.route("/operator/snapshot", methods=["GET", "PUT", "POST"])
def snapshot() -> Response:
    raise DoneElsewhere.of("Snapshot", SNAPSHOT)


@bp.route("/agent/join", methods=["PUT", "POST"])
@bp.route("/agent/force-leave", methods=["PUT", "POST"])
@bp.route("/agent/keyring/<string:op>", methods=["GET", "PUT", "POST"])
def gossip(op: str = "") -> Response:
    raise DoneElsewhere.of("Gossip", GOSSIP)


@bp.get("/agent/servers")
def servers() -> Response:
    """Every corral server serves the whole API: the list a client would use is this one."""
    return respond([server_address()], 0)


@bp.route("/agent/servers", methods=["PUT", "POST"])
def set_servers() -> Response:
    raise DoneElsewhere.of("Servers", CLIENT_SERVERS)


@bp.route("/system/reconcile/summaries", methods=["PUT", "POST"])
def reconcile_summaries() -> Response:
    """Nomad rebuilds job summaries it keeps in Raft; corral computes each summary from the
    allocations when it is read, so there is nothing to rebuild and the call succeeds."""
    return respond(None, 0)
