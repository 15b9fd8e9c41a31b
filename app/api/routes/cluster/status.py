"""/v1/status/leader, /v1/status/peers, /v1/agent/members and /v1/regions: the routes tools call
to learn who serves the cluster.

corral keeps no registry of API servers: every server is an equal, stateless front of the one
database. A server answers with its own address; the leader and applier roles are the holders
recorded in leader_terms, listed among the members with their term and whether they renew."""

from __future__ import annotations

from datetime import UTC, datetime

from flask import Blueprint, Response, request
from sqlalchemy import select
from sqlalchemy.orm import Session

from app.api.http.context import read, respond, state
from app.api.routes.cluster.agent import VERSION
from app.db.leadership import STALE_AFTER
from app.models import LeaderTerm
from app.wire.api.api_status import ServerMemberJson, ServerMembersJson

bp = Blueprint("status", __name__)
REGION = "global"  # corral has one region, Nomad's default name
DATACENTER = "dc1"
WILDCARD_HOSTS = ("0.0.0.0", "::", "[::]", "")


def server_address() -> str:
    """host:port of this server: its bind address, or the address the caller reached when it
    binds every interface."""
    host, _, port = state().settings.bind.rpartition(":")
    if host in WILDCARD_HOSTS:
        return request.host if ":" in request.host else f"{request.host}:{port}"
    return f"{host}:{port}"


def _terms(session: Session) -> list[tuple[LeaderTerm, bool]]:
    """Each singleton role's holder and whether it renewed its term recently."""
    now = datetime.now(UTC)
    rows = session.scalars(select(LeaderTerm).order_by(LeaderTerm.role)).all()
    return [(row, now - row.renewed_at < STALE_AFTER) for row in rows]


@bp.get("/status/leader")
def leader() -> Response:
    """Nomad answers the leader's "ip:port" as a JSON string. Every corral server serves the
    whole API, so this is the answering server's address while a leader role holds a live
    term, and "" when no leader process is running (nothing expires heartbeats or collects)."""

    def fetch(session: Session) -> str:
        live = any(alive for row, alive in _terms(session) if row.role == "leader")
        return server_address() if live else ""

    body, index = read(["_global"], fetch)
    return respond(body, index)


@bp.get("/status/peers")
def peers() -> Response:
    """The servers taking part in consensus: with Postgres holding the state, the answering one."""
    return respond([server_address()], 0)


@bp.get("/regions")
def regions() -> Response:
    return respond([REGION], 0)


@bp.get("/agent/members")
def members() -> Response:
    """Nomad's ServerMembers: this server, then the holder of each singleton role."""
    address = server_address()
    host, _, port = address.rpartition(":")
    name = f"{host}.{REGION}"

    def fetch(session: Session) -> ServerMembersJson:
        listed = [_member(name, host, int(port) if port.isdigit() else 0, "alive", {"role": "server"})]
        for row, alive in _terms(session):
            holder_host, _, pid = row.holder.rpartition(":")
            tags = {"role": row.role, "term": str(row.term), "pid": pid, "renewed_at": row.renewed_at.isoformat()}
            listed.append(_member(f"{row.holder}.{row.role}", holder_host, 0, "alive" if alive else "failed", tags))
        return {"ServerName": name, "ServerRegion": REGION, "ServerDC": DATACENTER, "Members": listed}

    body, index = read(["_global"], fetch)
    return respond(body, index)


def _member(name: str, addr: str, port: int, status: str, tags: dict[str, str]) -> ServerMemberJson:
    return {
        "Name": name,
        "Addr": addr,
        "Port": port,
        "Tags": {"region": REGION, "dc": DATACENTER, "build": VERSION, **tags},
        "Status": status,
        "ProtocolMin": 1,
        "ProtocolMax": 5,
        "ProtocolCur": 2,
        "DelegateMin": 2,
        "DelegateMax": 5,
        "DelegateCur": 4,
    }
