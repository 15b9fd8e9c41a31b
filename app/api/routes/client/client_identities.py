"""A client asks the servers for its tasks' workload identities (Nomad's Alloc.SignIdentities),
authenticated by the node's SecretID; only allocations placed on that node are signed."""

from __future__ import annotations

from uuid import UUID

from flask import Blueprint, Response
from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from app.api.http.context import client_lane, respond, state, write
from app.api.http.params import json_body, uuid_value
from app.api.http.validation import validate
from app.api.routes.client.client import node_secret
from app.store import client_allocs, identities
from app.wire.api.api_identities import IdentityRejectionJson, SignedIdentityJson, SignIdentitiesResponseJson

bp = Blueprint("client_identities", __name__)
MAX_REQUESTS = 1000


class _Request(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    AllocID: UUID = Field(strict=False)
    TaskName: str = Field(min_length=1, max_length=256)
    IdentityName: str = Field(default="default", min_length=1, max_length=128)


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)
    Identities: list[_Request] = Field(max_length=MAX_REQUESTS)


def _signed(found: identities.Signed) -> SignedIdentityJson:
    asked = found.request
    return {
        "AllocID": str(asked.alloc_id),
        "TaskName": asked.task,
        "IdentityName": asked.name,
        "JWT": found.jwt,
        "Expiration": found.expiration_s,
    }


def _rejection(found: identities.Rejected) -> IdentityRejectionJson:
    asked = found.request
    return {"AllocID": str(asked.alloc_id), "TaskName": asked.task, "IdentityName": asked.name, "Reason": found.reason}


@bp.route("/node/<node_id>/identities", methods=["PUT", "POST"])
@client_lane
def sign_identities(node_id: str) -> Response:
    key = uuid_value(node_id, "NodeID")
    secret = node_secret()
    body = validate(_Body, json_body(), "")
    wanted = [identities.IdentityRequest(r.AllocID, r.TaskName, r.IdentityName) for r in body.Identities]
    root, issuer = state().root_key, state().settings.oidc_issuer or ""

    def sign(session: Session) -> tuple[list[identities.Signed], list[identities.Rejected]]:
        client_allocs.authenticate(session, key, secret)
        return identities.sign_for_node(session, root, key, wanted, issuer)

    signed, rejected = write(sign)
    answer: SignIdentitiesResponseJson = {
        "SignedIdentities": [_signed(s) for s in signed],
        "Rejections": [_rejection(r) for r in rejected],
    }
    return respond(answer, 0)
