"""/v1/node/pools and /v1/node/pool/:name[/nodes|/jobs]: Nomad's node pool objects. 'default'
and 'all' are built in; a job's NodePool limits its placements to the pool's nodes ('all': any
node; app/scheduler/feasibility/feasible.py). Pool scheduler configuration is Nomad Enterprise's (Node Pools
Governance): Nomad's community edition refuses it, and so does corral."""

from __future__ import annotations

import re

from flask import Blueprint, Response
from pydantic import BaseModel, ConfigDict, Field, field_validator
from sqlalchemy.orm import Session

from app.api.access.callers import caller
from app.api.encoders import job_encode, node_encode
from app.api.http.context import read, respond, write
from app.api.http.params import json_body, namespace, path_value, prefix_arg
from app.api.http.validation import validate
from app.models import NodePool
from app.store.job import job_reads as reads
from app.store.node import node_pools as store
from app.values.errors import InvalidInput
from app.wire.job import JobListStubJson
from app.wire.node import NodePoolJson

bp = Blueprint("node_pools", __name__)
NAME = re.compile(r"^[a-zA-Z0-9_-]{1,128}$")  # Nomad's ValidateNodePoolName
MAX_DESCRIPTION = 256
UNLICENSED = "is Nomad Enterprise's \"Node Pools Governance\", which corral (as Nomad's community edition) lacks"


def pool_json(row: NodePool) -> NodePoolJson:
    return {
        "Name": row.name,
        "Description": row.description,
        "Meta": dict(row.meta or {}) or None,
        "SchedulerConfiguration": None,
        "NodeIdentityTTL": 0,  # corral's nodes have no identity tokens: they hold a SecretID
        "CreateIndex": row.create_index,
        "ModifyIndex": row.modify_index,
    }


class _PoolBody(BaseModel):
    """Nomad's api.NodePool as its client sends it; the indexes it may carry back are ignored."""

    model_config = ConfigDict(extra="ignore", strict=True)
    Name: str
    Description: str = Field(default="", max_length=MAX_DESCRIPTION)
    Meta: dict[str, str] | None = None
    SchedulerConfiguration: dict[str, object] | None = None  # refused whatever it holds
    NodeIdentityTTL: str | int | None = None

    @field_validator("Name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME.fullmatch(value):
            raise ValueError(f"invalid name {value!r}, must match {NAME.pattern}")
        return value

    @field_validator("SchedulerConfiguration")
    @classmethod
    def _governance(cls, value: dict[str, object] | None) -> dict[str, object] | None:
        if value is not None:
            raise ValueError(UNLICENSED)
        return value

    @field_validator("NodeIdentityTTL")
    @classmethod
    def _identity_ttl(cls, value: str | int | None) -> str | int | None:
        if value not in (None, "", 0):
            raise ValueError("corral's nodes have no identity tokens (they hold a SecretID): leave it empty")
        return value


@bp.get("/node/pools")
def list_pools() -> Response:
    """Only the pools the caller's token may use (Nomad's AllowNodePool), by name."""
    prefix, acl = prefix_arg() or "", caller().acl
    rows, index = read(
        ["node_pools"], lambda s: [pool_json(r) for r in store.list_pools(s, prefix) if acl.allow_node_pool(r.name)]
    )
    return respond(rows, index)


@bp.get("/node/pool/<name>")
def get_pool(name: str) -> Response:
    row, index = read(["node_pools"], lambda s: pool_json(store.get_pool(s, path_value(name, "Name"))))
    return respond(row, index)


@bp.route("/node/pools", methods=["PUT", "POST"], defaults={"name": None})
@bp.route("/node/pool/<name>", methods=["PUT", "POST"])
def put_pool(name: str | None) -> Response:
    body = validate(_PoolBody, json_body(), "")
    if name is not None and body.Name != name:
        raise InvalidInput.of("Name", "Node pool name does not match request path")
    spec = store.PoolSpec(body.Name, body.Description, dict(body.Meta or {}))
    index = write(lambda s: store.upsert_pool(s, spec))
    return respond(None, index)


@bp.delete("/node/pool/<name>")
def delete_pool(name: str) -> Response:
    index = write(lambda s: store.delete_pool(s, path_value(name, "Name")))
    return respond(None, index)


@bp.get("/node/pool/<name>/nodes")
def pool_nodes(name: str) -> Response:
    """The pool's nodes as Nomad's NodeListStubs ('all': every node)."""
    rows, index = read(
        ["nodes", "node_pools"],
        lambda s: [node_encode.node_stub(n) for n in store.pool_nodes(s, path_value(name, "Name"))],
    )
    return respond(rows, index)


@bp.get("/node/pool/<name>/jobs")
def pool_jobs(name: str) -> Response:
    """The jobs targeting the pool in ?namespace= ('*': all), those of namespaces the token
    may not list left out, as Nomad's JobListStubs."""
    ns, acl = namespace(allow_wildcard=True), caller().acl

    def fetch(session: Session) -> list[JobListStubJson]:
        jobs = [
            job
            for job in store.pool_jobs(session, path_value(name, "Name"), ns)
            if acl.allow_namespace_op(job.namespace, "list-jobs")
        ]
        if not jobs:
            return []
        summaries, statuses = reads.task_group_summaries(session, ns), reads.derived_statuses(session, ns)
        children = reads.children_summaries(session, ns)
        stubs = []
        for job in jobs:
            key = (job.namespace, job.id)
            summary = job_encode.job_summary(job, summaries.get(key, {}), children.get(key) or reads.no_children())
            stubs.append(job_encode.job_stub(job, summary, statuses.get(key, job.status)))
        return stubs

    rows, index = read(["jobs", "node_pools"], fetch)
    return respond(rows, index)
