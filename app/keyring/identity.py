"""Workload identities: the JWT a task carries, with Nomad's claims (structs/workload_id.go),
signed RS256 by a keyring key named in the `kid` header, and its verification against the
keyring's public keys."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm

ALGORITHM = "RS256"
DEFAULT_NAME = "default"
DEFAULT_AUDIENCE = "nomadproject.io"  # Nomad's IdentityDefaultAud
NANOS = 1_000_000_000


class IdentityError(ValueError):
    """The token is not a workload identity this keyring signed, or no longer valid."""


@dataclass(frozen=True)
class Subject:
    """What an identity is issued for."""

    region: str
    namespace: str
    job_id: str
    group: str
    task: str
    alloc_id: str


@dataclass(frozen=True)
class IdentitySpec:
    """A task's identity block (Nomad's WorkloadIdentity) as signing reads it."""

    name: str = DEFAULT_NAME
    audience: tuple[str, ...] = (DEFAULT_AUDIENCE,)
    ttl_ns: int = 0  # 0: the JWT never expires (Nomad sets no exp)
    env: bool = False
    file: bool = False

    @classmethod
    def of(cls, block: Mapping[str, Any] | None, name: str = DEFAULT_NAME) -> IdentitySpec:
        block = block or {}
        audience = block.get("Audience") or [DEFAULT_AUDIENCE]
        ttl = block.get("TTL") or 0
        return cls(
            name=str(block.get("Name") or name),
            audience=tuple(str(a) for a in audience) if isinstance(audience, list) else (str(audience),),
            ttl_ns=int(ttl) if isinstance(ttl, int | float) and not isinstance(ttl, bool) else 0,
            env=block.get("Env") is True,
            file=block.get("File") is True,
        )


@dataclass(frozen=True)
class Verified:
    """The claims of a verified identity that access decisions use."""

    namespace: str
    job_id: str
    alloc_id: str
    task: str


class Claims(TypedDict):
    """Nomad's WorkloadIdentityClaims as corral signs them."""

    nomad_namespace: str
    nomad_job_id: str
    nomad_allocation_id: str
    nomad_task: str
    sub: str
    aud: list[str] | str
    iat: int
    nbf: int
    jti: str
    exp: NotRequired[int]  # only with a TTL: Nomad's identities without one never expire
    iss: NotRequired[str]  # only when the servers have an oidc_issuer (Nomad's OIDCIssuer)


class Jwk(TypedDict):
    """An RSA public key as /.well-known/jwks.json publishes it (RFC 7517)."""

    kty: str
    key_ops: list[str]
    n: str
    e: str
    kid: str
    use: str
    alg: str


def claims(subject: Subject, spec: IdentitySpec, now_s: int, issuer: str = "") -> Claims:
    """Nomad's WorkloadIdentityClaims for a task, issued at `now_s` (Unix seconds) by `issuer`
    (none when unset, as Nomad without an oidc_issuer)."""
    body: Claims = {
        "nomad_namespace": subject.namespace,
        "nomad_job_id": subject.job_id,
        "nomad_allocation_id": subject.alloc_id,
        "nomad_task": subject.task,
        "sub": ":".join([subject.region, subject.namespace, subject.job_id, subject.group, subject.task, spec.name]),
        "aud": list(spec.audience) if len(spec.audience) != 1 else spec.audience[0],
        "iat": now_s,
        "nbf": now_s,
        "jti": str(uuid.uuid4()),
    }
    if spec.ttl_ns > 0:
        body["exp"] = now_s + -(-spec.ttl_ns // NANOS)
    if issuer:
        body["iss"] = issuer
    return body


def sign(body: Claims, key_id: uuid.UUID, private: rsa.RSAPrivateKey) -> str:
    return jwt.encode(dict(body), private, algorithm=ALGORITHM, headers={"kid": str(key_id)})


def looks_like_jwt(token: str) -> bool:
    """A token in the JWS compact form (ACL secrets are UUIDs, which have no dots)."""
    return token.count(".") == 2 and token.startswith("eyJ")


def key_id_of(token: str) -> uuid.UUID:
    try:
        header = jwt.get_unverified_header(token)
        return uuid.UUID(str(header.get("kid", "")))
    except (jwt.PyJWTError, ValueError):
        raise IdentityError("not a workload identity: no key ID") from None


def verify(token: str, public: rsa.RSAPublicKey) -> Verified:
    """The identity's claims, once its signature, nbf and exp check out (any audience: the
    API accepts the identity whatever it was issued for, as Nomad does)."""
    try:
        body = jwt.decode(
            token, public, algorithms=[ALGORITHM], options={"verify_aud": False, "require": ["iat", "nbf"]}
        )
    except jwt.PyJWTError as err:
        raise IdentityError(f"invalid workload identity: {err}") from None
    fields = ("nomad_namespace", "nomad_job_id", "nomad_allocation_id", "nomad_task")
    if not all(isinstance(body.get(name), str) and body.get(name) for name in fields):
        raise IdentityError("invalid workload identity: missing nomad_* claims")
    return Verified(body["nomad_namespace"], body["nomad_job_id"], body["nomad_allocation_id"], body["nomad_task"])


def jwk(key_id: uuid.UUID, public: rsa.RSAPublicKey) -> Jwk:
    """A key as /.well-known/jwks.json publishes it."""
    found = RSAAlgorithm.to_jwk(public, as_dict=True)
    return {
        "kty": found["kty"],
        "key_ops": found["key_ops"],
        "n": found["n"],
        "e": found["e"],
        "kid": str(key_id),
        "use": "sig",
        "alg": ALGORITHM,
    }


def named(identities: Sequence[Mapping[str, Any]] | None) -> list[IdentitySpec]:
    """A task's extra identities (its `identity "name" {}` blocks)."""
    return [IdentitySpec.of(block) for block in identities or [] if isinstance(block, Mapping) and block.get("Name")]
