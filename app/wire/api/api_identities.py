"""POST /v1/node/:id/identities: the workload identities a node's client asks the servers to
sign, and the answer (Nomad's SignedWorkloadIdentity and WorkloadIdentityRejection)."""

from __future__ import annotations

from typing import TypedDict


class IdentityRequestJson(TypedDict):
    AllocID: str
    TaskName: str
    IdentityName: str


class SignedIdentityJson(IdentityRequestJson):
    JWT: str
    Expiration: int  # Unix seconds; 0 when the identity never expires


class IdentityRejectionJson(IdentityRequestJson):
    Reason: str


class SignIdentitiesResponseJson(TypedDict):
    SignedIdentities: list[SignedIdentityJson]
    Rejections: list[IdentityRejectionJson]
