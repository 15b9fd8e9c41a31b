"""An OIDC auth method's OIDCClientAssertion (Nomad's private_key_jwt, RFC 7523): instead of
sending its client secret, the server authenticates to the provider's token endpoint with a
short-lived JWT it signs. What Nomad accepts and how it builds the JWT (nomad/structs/acl.go's
OIDCClientAssertion, lib/auth/oidc/client_assertion.go over hashicorp/cap's clientassertion):

- KeySource "client_secret": HS256/384/512 keyed by OIDCClientSecret (at least 32/48/64 bytes);
- "private_key": an RSA key given inline (PemKey) or by an absolute path on the servers
  (PemKeyFile), RS256/384/512, named to the provider by a KeyID (`kid` header) or by a
  certificate's thumbprint (`x5t#S256`, or `x5t`);
- "nomad": the keyring's active key (the one that signs workload identities), RS256, its ID in
  `kid`, so the provider verifies it with the servers' /.well-known/jwks.json.

The claims: iss = sub = the client ID, aud = Audience (OIDCDiscoveryURL unless given), a random
jti, iat now, nbf a second before, exp five minutes after. Pure but for reading key files."""

from __future__ import annotations

import base64
import hashlib
import os
import re
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime

import jwt
from cryptography import x509
from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from app.acl.config_fields import str_field, str_list
from app.values.errors import FieldProblem
from app.wire.acl import OIDCClientAssertion, OIDCClientAssertionKey
from app.wire.json import JsonObject, JsonValue

ASSERTION_TYPE = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer"
KEY_SOURCES = ("nomad", "private_key", "client_secret")
HMAC_MIN_BYTES = {"HS256": 32, "HS384": 48, "HS512": 64}  # cap's HSAlgorithm.Validate
RSA_ALGORITHMS = ("RS256", "RS384", "RS512")
NOMAD_ALGORITHM = "RS256"  # the keyring's keys are RSA keys signing RS256
KEY_ID_HEADERS = ("kid", "x5t", "x5t#S256")
LIFETIME_S = 300  # cap's clientassertion: exp = iat + 5 minutes
REDACTED = "redacted"  # what Nomad's ACLAuthMethod.Sanitize serves for a secret
FIELD = "Config.OIDCClientAssertion"
_KEY_FIELDS = ("PemKey", "PemKeyFile", "KeyIDHeader", "KeyID", "PemCert", "PemCertFile")
_ARMOURED = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----(.*?)-----END \1-----", re.DOTALL)


class AssertionProblem(ValueError):
    """The assertion cannot be built; `field` names the config field at fault."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@dataclass(frozen=True)
class NomadKey:
    """The keyring's active key, for KeySource "nomad"."""

    key_id: uuid.UUID
    private: rsa.RSAPrivateKey


def checked(raw: JsonValue, config: JsonObject, problems: list[FieldProblem]) -> JsonObject | None:
    """Nomad's OIDCClientAssertion.Canonicalize then Validate (and, as its upsert does, a trial of
    the key material): the assertion as stored, or None when the method has none. CONFIG is the
    method's config checked so far (its discovery URL and client secret)."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append(FieldProblem(FIELD, "must be an object"))
        return None
    before = len(problems)
    stored = _shaped(raw, problems)
    if len(problems) > before:
        return None
    _canonicalize(stored, config)
    try:
        _validate(stored, str_field(config, "OIDCClientSecret"))
    except AssertionProblem as err:
        problems.append(FieldProblem(err.field, f"invalid client assertion config: {err}"))
    return stored


def _shaped(raw: JsonObject, problems: list[FieldProblem]) -> JsonObject:
    """The fields with their JSON types checked. Others are ignored, as Go's decoder ignores
    them: ClientSecret, which Nomad's canonicalize overwrites with OIDCClientSecret, and any a
    newer client knows of."""
    stored: JsonObject = {}
    for name in ("KeySource", "KeyAlgorithm"):
        value = raw.get(name) or ""
        if not isinstance(value, str):
            problems.append(FieldProblem(f"{FIELD}.{name}", "must be a string"))
        stored[name] = value
    audience = raw.get("Audience") or []
    if not isinstance(audience, list) or not all(isinstance(a, str) for a in audience):
        problems.append(FieldProblem(f"{FIELD}.Audience", "must be a list of strings"))
    stored["Audience"] = audience
    headers = raw.get("ExtraHeaders") or {}
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        problems.append(FieldProblem(f"{FIELD}.ExtraHeaders", "must be a map of header names to strings"))
    stored["ExtraHeaders"] = headers
    key = raw.get("PrivateKey")
    stored["PrivateKey"] = None
    if isinstance(key, dict):
        stored["PrivateKey"] = _shaped_key(key, problems)
    elif key is not None:
        problems.append(FieldProblem(f"{FIELD}.PrivateKey", "must be an object"))
    return stored


def _shaped_key(raw: JsonObject, problems: list[FieldProblem]) -> JsonObject:
    key: JsonObject = {}
    for name in _KEY_FIELDS:
        value = raw.get(name) or ""
        if not isinstance(value, str):
            problems.append(FieldProblem(f"{FIELD}.PrivateKey.{name}", "must be a string"))
        key[name] = value
    return key


def _canonicalize(stored: JsonObject, config: JsonObject) -> None:
    """Nomad's defaults: the audience is the provider, the algorithm follows the key source, a
    KeyID goes in `kid` and a certificate's thumbprint in `x5t#S256`."""
    if not str_list(stored, "Audience"):
        stored["Audience"] = [str_field(config, "OIDCDiscoveryURL")]
    if not stored["KeyAlgorithm"]:
        source = stored["KeySource"]
        stored["KeyAlgorithm"] = "HS256" if source == "client_secret" else "RS256" if source in KEY_SOURCES else ""
    key = stored["PrivateKey"]
    if isinstance(key, dict) and not key["KeyIDHeader"]:
        if key["KeyID"]:
            key["KeyIDHeader"] = "kid"
        if key["PemCert"] or key["PemCertFile"]:
            key["KeyIDHeader"] = "x5t#S256"


def _validate(stored: JsonObject, secret: str) -> None:
    audience = str_list(stored, "Audience")
    if not audience or not audience[0]:
        raise AssertionProblem(f"{FIELD}.Audience", "missing Audience")
    source, algorithm = str_field(stored, "KeySource"), str_field(stored, "KeyAlgorithm")
    headers = stored["ExtraHeaders"]
    if isinstance(headers, dict) and "kid" in headers:
        raise AssertionProblem(f"{FIELD}.ExtraHeaders", 'the "kid" header may not be set here; use PrivateKey.KeyID')
    if isinstance(headers, dict) and "alg" in headers:
        raise AssertionProblem(f"{FIELD}.ExtraHeaders", 'the "alg" header is KeyAlgorithm')
    if source == "nomad":
        if algorithm != NOMAD_ALGORITHM:
            raise AssertionProblem(
                f"{FIELD}.KeyAlgorithm", f"KeySource nomad signs with the keyring's RSA key: {NOMAD_ALGORITHM} only"
            )
    elif source == "private_key":
        key = stored["PrivateKey"]
        if not isinstance(key, dict):
            raise AssertionProblem(f"{FIELD}.PrivateKey", "PrivateKey is required for `private_key` KeySource")
        if algorithm not in RSA_ALGORITHMS:
            raise AssertionProblem(
                f"{FIELD}.KeyAlgorithm", f"unsupported algorithm {algorithm!r} for an RSA key: RS256, RS384 or RS512"
            )
        _validate_key(key)
        _key_material(key)  # Nomad's upsert builds the JWT once: a key that does not load is refused now
    elif source == "client_secret":
        if not secret:
            raise AssertionProblem(
                "Config.OIDCClientSecret", "OIDCClientSecret is required for `client_secret` KeySource"
            )
        _check_hmac(algorithm, secret)
    else:
        raise AssertionProblem(
            f"{FIELD}.KeySource", f"invalid KeySource {source!r}: nomad, private_key or client_secret"
        )


def _check_hmac(algorithm: str, secret: str) -> None:
    minimum = HMAC_MIN_BYTES.get(algorithm)
    if minimum is None:
        raise AssertionProblem(
            f"{FIELD}.KeyAlgorithm", f"unsupported algorithm {algorithm!r} for a client secret: HS256, HS384 or HS512"
        )
    if len(secret.encode()) < minimum:
        raise AssertionProblem(
            "Config.OIDCClientSecret", f"{algorithm} needs an OIDCClientSecret of at least {minimum} bytes"
        )


def _validate_key(key: JsonObject) -> None:
    """Nomad's OIDCClientAssertionKey.Validate: one key, one way to name it, absolute paths."""
    where = f"{FIELD}.PrivateKey"
    pem_key, key_file = str_field(key, "PemKey"), str_field(key, "PemKeyFile")
    if not pem_key and not key_file:
        raise AssertionProblem(where, "missing PemKey or PemKeyFile")
    if pem_key and key_file:
        raise AssertionProblem(where, "require only one of PemKey or PemKeyFile")
    if key_file and not os.path.isabs(key_file):
        raise AssertionProblem(f"{where}.PemKeyFile", f"invalid PemKeyFile: must be absolute; got: {key_file}")
    namers = [n for n in ("PemCert", "PemCertFile", "KeyID") if str_field(key, n)]
    if not namers:
        raise AssertionProblem(where, "missing PemCert, PemCertFile, or KeyID")
    if len(namers) > 1:
        raise AssertionProblem(where, "require only one of PemCert, PemCertFile, or KeyID")
    cert_file = str_field(key, "PemCertFile")
    if cert_file and not os.path.isabs(cert_file):
        raise AssertionProblem(f"{where}.PemCertFile", f"invalid PemCertFile: must be absolute; got: {cert_file}")
    header = str_field(key, "KeyIDHeader")
    if namers == ["KeyID"] and header != "kid":
        raise AssertionProblem(f"{where}.KeyIDHeader", 'invalid KeyIDHeader; key header for key ID must be "kid"')
    if namers != ["KeyID"] and header not in ("x5t", "x5t#S256"):
        raise AssertionProblem(
            f"{where}.KeyIDHeader",
            'invalid KeyIDHeader; certificate-derived key header must be one of: "x5t#S256", "x5t"',
        )


def _pem(key: JsonObject, inline: str, path: str) -> tuple[bytes, str]:
    """The PEM text given inline or read from its file, its base64 re-wrapped so that a one-line
    paste still parses (Nomad's newlineHeaders puts back the newlines around the armour; Go's
    PEM decoder is laxer than OpenSSL's about the rest); and the field it came from."""
    if str_field(key, inline):
        text, source = str_field(key, inline), inline
    else:
        source = path
        try:
            with open(str_field(key, path), encoding="utf-8") as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError) as err:
            raise AssertionProblem(f"{FIELD}.PrivateKey.{source}", f"error reading {source}: {err}") from None
    found = _ARMOURED.search(text)
    if found is None:
        return text.encode(), source  # not PEM: the parser says why
    label, body = found.group(1), "".join(found.group(2).split())
    lines = [body[i : i + 64] for i in range(0, len(body), 64)]
    return "\n".join([f"-----BEGIN {label}-----", *lines, f"-----END {label}-----", ""]).encode(), source


def _key_material(key: JsonObject) -> tuple[rsa.RSAPrivateKey, dict[str, str]]:
    """The RSA key that signs and the header that names it (kid, or a certificate thumbprint)."""
    pem, source = _pem(key, "PemKey", "PemKeyFile")
    try:
        private = serialization.load_pem_private_key(pem, password=None)
    except (ValueError, TypeError, UnsupportedAlgorithm) as err:
        raise AssertionProblem(f"{FIELD}.PrivateKey.{source}", f"error parsing {source}: {err}") from None
    if not isinstance(private, rsa.RSAPrivateKey):
        raise AssertionProblem(f"{FIELD}.PrivateKey.{source}", f"error parsing {source}: not an RSA private key")
    if str_field(key, "KeyID"):
        return private, {"kid": str_field(key, "KeyID")}
    header = str_field(key, "KeyIDHeader")
    return private, {header: _thumbprint(key, header)}


def _thumbprint(key: JsonObject, header: str) -> str:
    """RFC 7515's x5t (SHA-1) or x5t#S256 (SHA-256) of the certificate's DER, base64url."""
    pem, source = _pem(key, "PemCert", "PemCertFile")
    where = f"{FIELD}.PrivateKey.{source}"
    try:
        cert = x509.load_pem_x509_certificate(pem)
    except ValueError as err:
        raise AssertionProblem(where, f"failed to parse {source}: {err}") from None
    now = datetime.now(UTC)
    if not cert.not_valid_before_utc <= now <= cert.not_valid_after_utc:
        raise AssertionProblem(where, "certificate has expired or is not yet valid")
    der = cert.public_bytes(serialization.Encoding.DER)
    # x5t is SHA-1 by RFC 7515 (a thumbprint that names a certificate, not a signature)
    digest = hashlib.sha1(der).digest() if header == "x5t" else hashlib.sha256(der).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def build(config: JsonObject, nomad_key: NomadKey | None, now_s: int) -> str:
    """The signed client assertion for a token request of the method whose config is CONFIG
    (NOMAD_KEY: the keyring's active key, needed for KeySource "nomad")."""
    stored = config.get("OIDCClientAssertion")
    if not isinstance(stored, dict):
        raise AssertionProblem(FIELD, "the auth method has no client assertion")
    client_id, audience = str_field(config, "OIDCClientID"), str_list(stored, "Audience")
    claims: JsonObject = {
        "iss": client_id,
        "sub": client_id,
        "aud": audience[0] if len(audience) == 1 else list(audience),  # go-jose writes one audience bare
        "exp": now_s + LIFETIME_S,
        "nbf": now_s - 1,
        "iat": now_s,
        "jti": str(uuid.uuid4()),
    }
    extra = stored.get("ExtraHeaders")
    headers: dict[str, str] = {k: v for k, v in extra.items() if isinstance(v, str)} if isinstance(extra, dict) else {}
    source, algorithm = str_field(stored, "KeySource"), str_field(stored, "KeyAlgorithm")
    signing: rsa.RSAPrivateKey | bytes
    if source == "client_secret":
        secret = str_field(config, "OIDCClientSecret")
        _check_hmac(algorithm, secret)
        signing = secret.encode()
    elif source == "nomad":
        if nomad_key is None:
            raise AssertionProblem(f"{FIELD}.KeySource", "no keyring key to sign with")
        signing, algorithm = nomad_key.private, NOMAD_ALGORITHM
        headers["kid"] = str(nomad_key.key_id)
    else:
        key = stored.get("PrivateKey")
        if not isinstance(key, dict):
            raise AssertionProblem(f"{FIELD}.PrivateKey", "PrivateKey is required for `private_key` KeySource")
        signing, named = _key_material(key)
        headers |= named
    headers["typ"] = "JWT"  # cap signs with WithType("JWT"), over any extra header
    return jwt.encode(claims, signing, algorithm=algorithm, headers=headers)


def served(stored: JsonValue, secret: str) -> OIDCClientAssertion | None:
    """The assertion as Nomad serves it: the inline key and the inherited secret redacted."""
    if not isinstance(stored, dict):
        return None
    key = stored.get("PrivateKey")
    served_key: OIDCClientAssertionKey | None = None
    if isinstance(key, dict):
        served_key = {
            "PemKey": REDACTED if str_field(key, "PemKey") else "",
            "PemKeyFile": str_field(key, "PemKeyFile"),
            "KeyIDHeader": str_field(key, "KeyIDHeader"),
            "KeyID": str_field(key, "KeyID"),
            "PemCert": str_field(key, "PemCert"),
            "PemCertFile": str_field(key, "PemCertFile"),
        }
    headers = stored.get("ExtraHeaders")
    return {
        "KeySource": str_field(stored, "KeySource"),
        "Audience": str_list(stored, "Audience"),
        "PrivateKey": served_key,
        "ExtraHeaders": {k: v for k, v in headers.items() if isinstance(v, str)} if isinstance(headers, dict) else {},
        "KeyAlgorithm": str_field(stored, "KeyAlgorithm"),
        "ClientSecret": REDACTED if secret else "",
    }


def restore_redacted(raw: JsonValue, stored: JsonValue) -> JsonValue:
    """An update's assertion with a PemKey of "redacted" (a read sent back, as `acl auth-method
    update` does) given the stored key again, so a read-modify-write keeps it."""
    if not isinstance(raw, dict) or not isinstance(stored, dict):
        return raw
    key, kept = raw.get("PrivateKey"), stored.get("PrivateKey")
    if not isinstance(key, dict) or not isinstance(kept, dict) or key.get("PemKey") != REDACTED:
        return raw
    return {**raw, "PrivateKey": {**key, "PemKey": kept.get("PemKey")}}
