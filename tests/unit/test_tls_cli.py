"""`corral tls ca|cert create|info`: Nomad's file names, SANs, key usages, validity, name
constraints, refusal to overwrite, and certificates that verify against their CA."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID

from app.cli import main

pytestmark = pytest.mark.unit


def run(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=False)


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("NOMAD_REGION", raising=False)
    return tmp_path


def load(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def sans(cert: x509.Certificate) -> tuple[list[str], list[str]]:
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return san.get_values_for_type(x509.DNSName), [str(ip) for ip in san.get_values_for_type(x509.IPAddress)]


def test_ca_create_writes_nomads_files_and_refuses_to_overwrite(in_tmp: Path) -> None:
    result = run(["tls", "ca", "create", "-days", "10"])
    assert result.exit_code == 0, result.output
    assert "==> CA certificate saved to: nomad-agent-ca.pem" in result.output
    ca = load(in_tmp / "nomad-agent-ca.pem")
    assert ca.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    assert dt.timedelta(days=9) < ca.not_valid_after_utc - dt.datetime.now(dt.UTC) <= dt.timedelta(days=10)
    assert (in_tmp / "nomad-agent-ca-key.pem").stat().st_mode & 0o777 == 0o600
    again = run(["tls", "ca", "create"])
    assert again.exit_code == 1 and "CA certificate file 'nomad-agent-ca.pem' already exists" in again.output


def test_custom_domain_needs_name_constraint_and_sets_it(in_tmp: Path) -> None:
    refused = run(["tls", "ca", "create", "-domain", "corp"])
    assert refused.exit_code == 2 and "-name-constraint" in refused.output
    ok = run(["tls", "ca", "create", "-domain", "corp", "-name-constraint", "-additional-domain", "example.org"])
    assert ok.exit_code == 0, ok.output
    constraints = load(in_tmp / "corp-agent-ca.pem").extensions.get_extension_for_class(x509.NameConstraints).value
    assert [n.value for n in constraints.permitted_subtrees or []] == ["corp", "localhost", "nomad", "example.org"]
    info = run(["tls", "ca", "info", "corp-agent-ca.pem"])
    assert "Permitted DNS Domains = ['corp', 'localhost', 'nomad', 'example.org']" in info.output


@pytest.mark.parametrize(
    ("flag", "prefix", "ips"),
    [("-server", "global-server-nomad", ["10.0.0.5", "127.0.0.1"]), ("-cli", "global-cli-nomad", ["10.0.0.5"])],
)
def test_cert_create_names_sans_and_usages(in_tmp: Path, flag: str, prefix: str, ips: list[str]) -> None:
    assert run(["tls", "ca", "create"]).exit_code == 0
    args = ["tls", "cert", "create", flag, "-additional-dnsname", "api.example", "-additional-ipaddress", "10.0.0.5"]
    result = run(args)
    assert result.exit_code == 0, result.output
    cert, ca = load(in_tmp / f"{prefix}.pem"), load(in_tmp / "nomad-agent-ca.pem")
    role = flag.lstrip("-")
    assert sans(cert) == (["api.example", f"{role}.global.nomad", "localhost"], ips)
    usages = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert set(usages) == {ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH}
    assert cert.issuer == ca.subject
    cert.verify_directly_issued_by(ca)
    assert (in_tmp / f"{prefix}-key.pem").stat().st_mode & 0o777 == 0o600
    info = run(["tls", "cert", "info", f"{prefix}.pem"])
    assert f"Common Name   = {role}.global.nomad" in info.output


def test_cert_create_region_and_domain_shape_the_names(in_tmp: Path) -> None:
    assert run(["tls", "ca", "create", "-domain", "corp", "-name-constraint"]).exit_code == 0
    result = run(["tls", "cert", "create", "-client", "-domain", "corp", "-region", "eu"])
    assert result.exit_code == 0, result.output
    cert = load(in_tmp / "eu-client-corp.pem")
    assert sans(cert)[0] == ["client.eu.corp", "client.eu.nomad", "client.global.nomad", "localhost"]


def test_cert_create_needs_exactly_one_role_and_a_readable_ca(in_tmp: Path) -> None:
    both = run(["tls", "cert", "create", "-server", "-client"])
    assert both.exit_code == 2 and "Please provide either -server, -client, or -cli" in both.output
    no_ca = run(["tls", "cert", "create", "-server"])
    assert no_ca.exit_code == 1 and "Error reading CA" in no_ca.output
    assert not (in_tmp / "global-server-nomad.pem").exists()
    assert run(["tls", "ca", "create"]).exit_code == 0
    bad_ip = run(["tls", "cert", "create", "-server", "-additional-ipaddress", "not-an-ip"])
    assert bad_ip.exit_code == 2 and "'not-an-ip' is not an IP address" in bad_ip.output


def test_a_key_of_another_ca_is_refused(in_tmp: Path) -> None:
    assert run(["tls", "ca", "create"]).exit_code == 0
    other = ec.generate_private_key(ec.SECP256R1())
    pem = other.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    (in_tmp / "other-key.pem").write_bytes(pem)
    result = run(["tls", "cert", "create", "-cli", "-key", "other-key.pem"])
    assert result.exit_code == 1 and "does not belong to the CA certificate" in result.output


def test_info_of_a_file_that_is_no_certificate(in_tmp: Path) -> None:
    (in_tmp / "junk.pem").write_text("junk")
    result = run(["tls", "cert", "info", "junk.pem"])
    assert result.exit_code == 1 and "not a PEM certificate" in result.output
