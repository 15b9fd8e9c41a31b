"""Sealing (AES-256-GCM bound to where a value belongs) and workload identities (RS256 JWTs with
Nomad's claims, verified against the public key)."""

from __future__ import annotations

import uuid

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from app.keyring import identity
from app.keyring.crypto import SealError, new_key, open_sealed, seal
from app.keyring.identity import IdentityError, IdentitySpec, Subject

pytestmark = pytest.mark.unit
SUBJECT = Subject("global", "default", "web", "g", "t", str(uuid.uuid4()))


def test_sealing_round_trips_and_binds_the_associated_data() -> None:
    key = new_key()
    sealed = seal(key, b"hello", b"default\x00a")
    assert b"hello" not in sealed and len(key) == 32
    assert open_sealed(key, sealed, b"default\x00a") == b"hello"
    assert seal(key, b"hello", b"x") != seal(key, b"hello", b"x")  # a fresh nonce each time
    with pytest.raises(SealError):
        open_sealed(key, sealed, b"default\x00b")
    with pytest.raises(SealError):
        open_sealed(new_key(), sealed, b"default\x00a")
    with pytest.raises(SealError):
        open_sealed(key, sealed[:-1] + bytes([sealed[-1] ^ 1]), b"default\x00a")


def test_a_wrapped_data_key_opens_only_with_its_root_key_and_id() -> None:
    root, data = new_key(), new_key()
    key_id = uuid.uuid4()
    wrapped = seal(root, data, f"data:{key_id}".encode())
    assert open_sealed(root, wrapped, f"data:{key_id}".encode()) == data
    with pytest.raises(SealError):
        open_sealed(new_key(), wrapped, f"data:{key_id}".encode())


def _private() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def test_identity_claims_are_nomads() -> None:
    body = identity.claims(SUBJECT, IdentitySpec(ttl_ns=3600 * 10**9), 1000)
    assert body["nomad_namespace"] == "default" and body["nomad_job_id"] == "web"
    assert body["nomad_allocation_id"] == SUBJECT.alloc_id and body["nomad_task"] == "t"
    assert body["sub"] == "global:default:web:g:t:default"
    assert body["aud"] == "nomadproject.io" and body["iat"] == body["nbf"] == 1000
    assert body["exp"] == 4600
    assert "exp" not in identity.claims(SUBJECT, IdentitySpec(), 1000)  # no TTL: never expires


def test_a_signed_identity_verifies_with_its_key_and_names_its_kid() -> None:
    private, key_id = _private(), uuid.uuid4()
    token = identity.sign(identity.claims(SUBJECT, IdentitySpec(), 1000), key_id, private)
    assert identity.looks_like_jwt(token) and identity.key_id_of(token) == key_id
    verified = identity.verify(token, private.public_key())
    assert (verified.namespace, verified.job_id, verified.task) == ("default", "web", "t")
    with pytest.raises(IdentityError):
        identity.verify(token, _private().public_key())
    expired = identity.sign(identity.claims(SUBJECT, IdentitySpec(ttl_ns=10**9), 1000), key_id, private)
    with pytest.raises(IdentityError):
        identity.verify(expired, private.public_key())
    forged = jwt.encode({"nomad_namespace": "default"}, "secret", algorithm="HS256", headers={"kid": str(key_id)})
    with pytest.raises(IdentityError):
        identity.verify(forged, private.public_key())


def test_identity_blocks_are_read_as_nomads_workload_identity() -> None:
    spec = IdentitySpec.of({"Env": True, "File": True, "Audience": ["a", "b"], "TTL": 60 * 10**9})
    assert spec == IdentitySpec("default", ("a", "b"), 60 * 10**9, True, True)
    assert IdentitySpec.of(None) == IdentitySpec()
    assert [s.name for s in identity.named([{"Name": "vault_x"}, {"Env": True}])] == ["vault_x"]
    jwk = identity.jwk(uuid.UUID(int=1), _private().public_key())
    assert jwk["kty"] == "RSA" and jwk["alg"] == "RS256" and jwk["kid"] == str(uuid.UUID(int=1))
    assert not identity.looks_like_jwt(str(uuid.uuid4()))
