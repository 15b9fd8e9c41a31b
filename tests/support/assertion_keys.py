"""Key material for OIDC client assertion tests: an RSA key as PEM, a self-signed certificate for
it (valid now, or over a chosen window), and a certificate's RFC 7515 thumbprints, computed
here independently of app/acl/client_assertion.py."""

from __future__ import annotations

import base64
import hashlib
from datetime import UTC, datetime, timedelta

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import NameOID


def rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def private_pem(key: rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey) -> str:
    raw = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    return raw.decode()


def certificate_pem(key: rsa.RSAPrivateKey, *, starts: timedelta = timedelta(days=-1), days: int = 30) -> str:
    """A self-signed certificate for KEY valid from now + STARTS for DAYS days."""
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "corral-oidc-client")])
    begin = datetime.now(UTC) + starts
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(begin)
        .not_valid_after(begin + timedelta(days=days))
        .sign(key, hashes.SHA256())
    )
    return cert.public_bytes(serialization.Encoding.PEM).decode()


def thumbprint(cert_pem: str, *, sha256: bool = True) -> str:
    """x5t#S256 (or x5t, SHA-1) of the certificate: base64url of its DER's digest, unpadded."""
    der = x509.load_pem_x509_certificate(cert_pem.encode()).public_bytes(serialization.Encoding.DER)
    digest = hashlib.sha256(der).digest() if sha256 else hashlib.sha1(der).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()
