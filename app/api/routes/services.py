"""Nomad's native service discovery: /v1/services, /v1/service/<name> (with ?choose=),
DELETE /v1/service/<name>/<id>, a job's and an allocation's services; and the client's
PUT /v1/node/<id>/services, which sets the registrations of its allocations."""

from __future__ import annotations

import hashlib
from collections import defaultdict
from typing import Any

from flask import Blueprint, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from app.api.http.context import client_lane, client_write, read, respond, write
from app.api.http.listing import Entry, Order, as_is, list_query, page, with_token
from app.api.http.params import arg, json_body, namespace, uuid_value
from app.api.http.validation import validate
from app.api.routes.client.client import node_secret
from app.store import services as store
from app.store.services import RegistrationJson
from app.values.errors import InvalidInput
from app.wire.api.api_services import ServiceListJson

bp = Blueprint("services", __name__)
TABLES = [store.TABLE]
MAX_ALLOCS = 5000
MAX_PER_ALLOC = 256
TEXT_LIMIT = 1024
CHOOSE_MALFORMED = "Parameter for choose must be in form '<number>|<key>'"


@bp.get("/services")
def list_services() -> Response:
    """Nomad's list: per namespace, each service name with the union of its instances' tags."""
    ns, query = namespace(allow_wildcard=True), list_query(reverse=False)

    def fetch(session: Session) -> list[ServiceListJson]:
        tags: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
        for row in store.listed(session, ns):
            if query.visibility.allows(row.namespace):
                tags[row.namespace][row.service_name].update(row.tags)
        return [
            {
                "Namespace": space,
                "Services": [{"ServiceName": name, "Tags": sorted(found)} for name, found in sorted(names.items())],
            }
            for space, names in sorted(tags.items())
        ]

    body, index = read(TABLES, fetch)
    return respond(body, index)


@bp.get("/service/<name>")
def get_service(name: str) -> Response:
    """Every registration of the service, paged as Nomad's (namespace.ID tokens); ?choose=N|key
    then picks N of them by rendezvous hashing, stable per key."""
    ns, query = namespace(allow_wildcard=False), list_query(reverse=False)
    assert ns is not None
    choose = arg("choose") or ""
    wanted = parse_choose(choose) if choose else None

    def fetch(session: Session) -> tuple[list[RegistrationJson], str | None]:
        bodies = [store.encode(row) for row in store.by_name(session, ns, name)]
        entries = [Entry(b["Namespace"], b["ID"], b["CreateIndex"], as_is(b), b) for b in bodies]
        return page(entries, Order.NAMESPACE_ID, query)

    (found, token), index = read(TABLES, fetch)
    if wanted is not None:
        found = chosen(found, *wanted)
    return with_token(respond(found, index), token)


def parse_choose(raw: str) -> tuple[int, str]:
    """`<number>|<key>`, as Nomad's; InvalidInput naming choose otherwise."""
    count, bar, key = raw.partition("|")
    if not bar or not key or not count.lstrip("-").isdigit():
        raise InvalidInput.of("choose", CHOOSE_MALFORMED)
    return int(count), key


def hash_with(reg: RegistrationJson, key: str) -> str:
    """Nomad's ServiceRegistration.HashWith: the instance's identity and the caller's key."""
    digest = hashlib.sha256()
    digest.update(reg["Port"].to_bytes(8, "big", signed=True))
    for part in (reg["AllocID"], reg["ID"], reg["Namespace"], reg["Address"], reg["ServiceName"], *reg["Tags"], key):
        digest.update(part.encode())
    return digest.hexdigest()


def chosen(regs: list[RegistrationJson], count: int, key: str) -> list[RegistrationJson]:
    """Rendezvous hashing: the `count` instances whose hash with `key` sorts lowest. Each caller
    (key) gets its own stable order, and removing one instance moves only its own callers."""
    ranked = sorted(regs, key=lambda reg: hash_with(reg, key))
    return ranked[: max(0, min(count, len(ranked)))]


@bp.delete("/service/<name>/<registration_id>")
def delete_service(name: str, registration_id: str) -> Response:
    """Remove one registration (Nomad's operator cleanup of a stale instance)."""
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    index = write(lambda s: store.delete_by_id(s, ns, registration_id))
    return respond(None, index)


@bp.get("/job/<path:job_id>/services")
def job_services(job_id: str) -> Response:
    ns = namespace(allow_wildcard=False)
    assert ns is not None
    body, index = read(TABLES, lambda s: [store.encode(row) for row in store.by_job(s, ns, job_id)])
    return respond(body, index)


@bp.get("/allocation/<alloc_id>/services")
def alloc_services(alloc_id: str) -> Response:
    key = uuid_value(alloc_id, "AllocID")
    body, index = read(TABLES, lambda s: [store.encode(row) for row in store.by_alloc(s, key)])
    return respond(body, index)


class _Registration(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    ID: str = Field(min_length=1, max_length=TEXT_LIMIT)
    ServiceName: str = Field(min_length=1, max_length=TEXT_LIMIT)
    Tags: list[str] = Field(default_factory=list, max_length=MAX_PER_ALLOC)
    Address: str = Field(default="", max_length=TEXT_LIMIT)
    Port: int = Field(default=0, ge=0, le=65535)


class _SyncBody(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True)
    Allocs: dict[str, list[_Registration]] = Field(max_length=MAX_ALLOCS)


@bp.route("/node/<node_id>/services", methods=["PUT", "POST"])
@client_lane
def sync_services(node_id: str) -> Response:
    """The client's registrations: for each allocation named, exactly the services listed
    (an empty list deregisters them all). Authenticated by the node's SecretID."""
    key = uuid_value(node_id, "NodeID")
    secret = node_secret()
    body = validate(_SyncBody, json_body(), "")
    offered: dict[Any, list[store.Offered]] = {}
    for raw_id, regs in body.Allocs.items():
        alloc = uuid_value(raw_id, f"Allocs[{raw_id!r}]")
        if len(regs) > MAX_PER_ALLOC:
            raise InvalidInput.of(f"Allocs[{raw_id!r}]", f"must hold at most {MAX_PER_ALLOC} registrations")
        offered[alloc] = [store.Offered(r.ID, r.ServiceName, alloc, tuple(r.Tags), r.Address, r.Port) for r in regs]
    result = client_write(lambda s: store.sync(s, key, secret, offered))
    answer = {"Index": result.index, "Upserted": result.upserted, "Removed": result.removed}
    return respond(answer, result.index)
