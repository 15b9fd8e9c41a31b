"""The certificates `corral tls` makes, as Nomad's tlsutil makes them: an ECDSA P-256 CA that
signs server, client and CLI certificates whose names follow Nomad's scheme
(`<role>.<region>.<domain>`, with `localhost` and, for servers and clients, 127.0.0.1 always in
the Subject Alternative Names). Pure functions over `cryptography`; the command writes the files."""

from __future__ import annotations

import datetime as dt
import ipaddress
import secrets
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ROLES = ("server", "client", "cli")
# Issued a minute in the past, so that a peer whose clock is a little behind accepts it at once.
BACKDATE = dt.timedelta(minutes=1)

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class PkiError(ValueError):
    """A CA or key that cannot be read or used; the message says which and why."""


@dataclass(frozen=True)
class Pem:
    """A certificate and its private key, PEM-encoded."""

    cert: bytes
    key: bytes


@dataclass(frozen=True)
class CertRequest:
    """What `tls cert create` asks for: ROLE's certificate for REGION and DOMAIN."""

    role: str
    region: str
    domain: str
    days: int
    dns_names: tuple[str, ...] = ()
    ip_addresses: tuple[IpAddress, ...] = ()

    @property
    def name(self) -> str:
        return f"{self.role}.{self.region}.{self.domain}"

    @property
    def file_prefix(self) -> str:
        """Nomad's file names: global-server-nomad.pem and global-server-nomad-key.pem."""
        return f"{self.region}-{self.role}-{self.domain}"


def _new_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    # SEC1 ("EC PRIVATE KEY"), the encoding Nomad writes and Go's tls.LoadX509KeyPair reads.
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
    )


def _serial() -> int:
    return secrets.randbits(127) + 1  # positive, at most 16 bytes (RFC 5280)


def create_ca(domain: str, common_name: str, days: int, permitted: tuple[str, ...], now: dt.datetime) -> Pem:
    """A self-signed CA valid for DAYS; with PERMITTED it may only sign names under those domains."""
    key = _new_key()
    serial = _serial()
    subject = x509.Name(
        [
            x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
            x509.NameAttribute(NameOID.STATE_OR_PROVINCE_NAME, "CA"),
            x509.NameAttribute(NameOID.LOCALITY_NAME, "San Francisco"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, "HashiCorp Inc."),
            x509.NameAttribute(NameOID.COMMON_NAME, common_name or f"{domain.capitalize()} Agent CA {serial}"),
        ]
    )
    public = key.public_key()
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(public)
        .serial_number(serial)
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + dt.timedelta(days=days))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(_usage(digital_signature=True, cert_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(public), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(public), critical=False)
    )
    if permitted:
        constraint = x509.NameConstraints(
            permitted_subtrees=[x509.DNSName(d) for d in permitted], excluded_subtrees=None
        )
        builder = builder.add_extension(constraint, critical=True)
    cert = builder.sign(key, hashes.SHA256())
    return Pem(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _usage(*, digital_signature: bool, cert_sign: bool = False, key_encipherment: bool = False) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=cert_sign,
        crl_sign=cert_sign,
        encipher_only=False,
        decipher_only=False,
    )


def sans(request: CertRequest) -> tuple[list[str], list[IpAddress]]:
    """The DNS names and IP addresses of REQUEST's certificate, in Nomad's order: the operator's
    own first, then the role's names under the region and `global`, then localhost."""
    dns = [d.strip() for d in request.dns_names if d.strip()]
    ips = list(request.ip_addresses)
    if request.role in ("server", "client"):
        ips.append(ipaddress.IPv4Address("127.0.0.1"))
    role, region = request.role, request.region
    names = [request.name, f"{role}.{region}.nomad", f"{role}.global.nomad", "localhost"]
    for name in names:
        if name not in dns:
            dns.append(name)
    return dns, ips


def load_ca(cert_pem: bytes, key_pem: bytes) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as err:
        raise PkiError(f"the CA file is not a PEM certificate: {err}") from None
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError) as err:
        raise PkiError(f"the CA key file is not an unencrypted PEM private key: {err}") from None
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise PkiError("the CA key is not an ECDSA key")
    public = cert.public_key()
    if (
        not isinstance(public, ec.EllipticCurvePublicKey)
        or public.public_numbers() != key.public_key().public_numbers()
    ):
        raise PkiError("the CA key does not belong to the CA certificate")
    return cert, key


def create_cert(request: CertRequest, ca_pem: bytes, ca_key_pem: bytes, now: dt.datetime) -> Pem:
    """REQUEST's certificate and key, signed by the CA; it serves TLS and authenticates as a TLS client."""
    ca, ca_key = load_ca(ca_pem, ca_key_pem)
    key = _new_key()
    dns, ips = sans(request)
    alternative: list[x509.GeneralName] = [x509.DNSName(d) for d in dns]
    alternative += [x509.IPAddress(ip) for ip in ips]
    usages = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
    cert = (
        x509.CertificateBuilder()
        .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, request.name)]))
        .issuer_name(ca.subject)
        .public_key(key.public_key())
        .serial_number(_serial())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + dt.timedelta(days=request.days))
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_usage(digital_signature=True, key_encipherment=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage(usages), critical=False)
        .add_extension(x509.SubjectAlternativeName(alternative), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    return Pem(cert.public_bytes(serialization.Encoding.PEM), _key_pem(key))


def _common_name(name: x509.Name) -> str:
    found = name.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(found[0].value) if found else ""


def describe(cert_pem: bytes) -> list[tuple[str, str]]:
    """What `tls ca info` and `tls cert info` print about a certificate."""
    try:
        cert = x509.load_pem_x509_certificate(cert_pem)
    except ValueError as err:
        raise PkiError(f"not a PEM certificate: {err}") from None
    rows = [
        ("Serial Number", str(cert.serial_number)),
        ("Issuer CN", _common_name(cert.issuer)),
        ("Common Name", _common_name(cert.subject)),
        ("Expiry Date", str(cert.not_valid_after_utc)),
    ]
    try:
        san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        rows.append(("DNS Names", str(san.get_values_for_type(x509.DNSName))))
        rows.append(("IP Addresses", str([str(ip) for ip in san.get_values_for_type(x509.IPAddress)])))
    except x509.ExtensionNotFound:
        pass
    try:
        constraints = cert.extensions.get_extension_for_class(x509.NameConstraints).value
        permitted = [str(n.value) for n in constraints.permitted_subtrees or []]
        rows.append(("Permitted DNS Domains", str(permitted)))
    except x509.ExtensionNotFound:
        pass
    return rows
