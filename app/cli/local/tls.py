"""`corral tls ca create|info` and `corral tls cert create|info`, as Nomad's: a CA and the
server, client and CLI certificates it signs, written in the working directory under Nomad's file
names (nomad-agent-ca.pem, global-server-nomad.pem, …). The files plug into corral's own TLS
settings (CORRAL_TLS_CERT_FILE/KEY_FILE/CA_FILE for the server, CORRAL_CACERT/CLIENT_CERT/
CLIENT_KEY for the CLI and clients; docs/security.md). An existing file is never overwritten."""

from __future__ import annotations

import datetime as dt
import ipaddress
import os
from pathlib import Path

import click

from app.cli.support.output import key_values


@click.group()
def tls() -> None:
    """Create and inspect the CA and certificates of a cluster's TLS."""


@tls.group()
def ca() -> None:
    """The certificate authority."""


@tls.group()
def cert() -> None:
    """The certificates the CA signs."""


def _write(path: Path, content: bytes, mode: int) -> None:
    """Write PATH only if it does not exist (O_EXCL: no race with another writer)."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode), "wb") as out:
        out.write(content)


def _refuse_existing(kind: str, path: Path) -> None:
    if path.exists():
        raise click.ClickException(f"{kind} file '{path}' already exists")


def _now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


@ca.command("create")
@click.option(
    "-additional-domain", "--additional-domain", multiple=True, help="Another permitted domain (with -name-constraint)."
)
@click.option(
    "-common-name", "--common-name", default="", help="The CA's common name [default: Nomad Agent CA <serial>]."
)
@click.option(
    "-days", "--days", type=click.IntRange(min=1), default=1825, show_default=True, help="Days the CA is valid."
)
@click.option("-domain", "--domain", default="nomad", show_default=True, help="The domain, and the files' prefix.")
@click.option(
    "-name-constraint",
    "--name-constraint",
    is_flag=True,
    help="Only let the CA sign names under -domain, localhost and nomad.",
)
def ca_create(
    additional_domain: tuple[str, ...], common_name: str, days: int, domain: str, name_constraint: bool
) -> None:
    """Create a CA: <domain>-agent-ca.pem and its key <domain>-agent-ca-key.pem."""
    from app.cli.local.tls_pki import create_ca

    if domain not in ("", "nomad") and not name_constraint:
        raise click.UsageError("Please provide the -name-constraint flag to use a custom domain constraint")
    if domain == "nomad" and name_constraint:
        raise click.UsageError("Please provide the -domain flag if you want to enable custom domain constraints")
    if not domain:
        raise click.UsageError("-domain must not be empty")
    cert_file, key_file = Path(f"{domain}-agent-ca.pem"), Path(f"{domain}-agent-ca-key.pem")
    _refuse_existing("CA certificate", cert_file)
    _refuse_existing("CA key", key_file)
    permitted = (domain, "localhost", "nomad", *additional_domain) if name_constraint else ()
    pem = create_ca(domain, common_name, days, permitted, _now())
    _write(cert_file, pem.cert, 0o644)
    click.echo(f"==> CA certificate saved to: {cert_file}")
    _write(key_file, pem.key, 0o600)
    click.echo(f"==> CA certificate key saved to: {key_file}")


def _info(path: str) -> None:
    from app.cli.local.tls_pki import PkiError, describe

    try:
        rows = describe(Path(path).read_bytes())
    except OSError as err:
        raise click.ClickException(f"Error reading certificate file: {err}") from None
    except PkiError as err:
        raise click.ClickException(f"Error reading {path}: {err}") from None
    for line in key_values(rows):
        click.echo(line)


@ca.command("info")
@click.argument("path")
def ca_info(path: str) -> None:
    """Show the CA certificate at PATH: serial, issuer, common name, expiry, permitted domains."""
    _info(path)


@cert.command("info")
@click.argument("path")
def cert_info(path: str) -> None:
    """Show the certificate at PATH: serial, issuer, common name, expiry, DNS names, IP addresses."""
    _info(path)


def _ip(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        raise click.BadParameter(f"{text!r} is not an IP address", param_hint="-additional-ipaddress") from None


def _role(server: bool, client: bool, cli: bool) -> str:
    chosen = [name for name, on in (("server", server), ("client", client), ("cli", cli)) if on]
    if len(chosen) != 1:
        raise click.UsageError("Please provide either -server, -client, or -cli")
    return chosen[0]


_SERVER_WARNING = """==> WARNING: Server Certificates grants authority to become a
    server and access all state in the cluster including root keys
    and all ACL tokens. Do not distribute them to production hosts
    that are not server nodes. Store them as securely as CA keys."""


@cert.command("create")
@click.option(
    "-additional-dnsname", "--additional-dnsname", multiple=True, help="Another DNS name (localhost is always in)."
)
@click.option(
    "-additional-ipaddress",
    "--additional-ipaddress",
    multiple=True,
    help="Another IP address (servers and clients: 127.0.0.1 is always in).",
)
@click.option("-ca", "--ca", "ca_path", default="#DOMAIN#-agent-ca.pem", show_default=True, help="The CA certificate.")
@click.option("-key", "--key", "key_path", default="#DOMAIN#-agent-ca-key.pem", show_default=True, help="The CA's key.")
@click.option("-cli", "--cli", is_flag=True, help="A certificate for the CLI.")
@click.option("-client", "--client", is_flag=True, help="A client (node agent) certificate.")
@click.option("-server", "--server", is_flag=True, help="A server certificate.")
@click.option(
    "-days", "--days", type=click.IntRange(min=1), default=365, show_default=True, help="Days the certificate is valid."
)
@click.option("-domain", "--domain", default="nomad", show_default=True, help="The domain.")
@click.option("-region", "--region", "region", default="", help="The region [default: NOMAD_REGION, else global].")
@click.option("-cluster-region", "--cluster-region", default="", help="Deprecated: -region.")
def cert_create(
    additional_dnsname: tuple[str, ...],
    additional_ipaddress: tuple[str, ...],
    ca_path: str,
    key_path: str,
    cli: bool,
    client: bool,
    server: bool,
    days: int,
    domain: str,
    region: str,
    cluster_region: str,
) -> None:
    """Create a -server, -client or -cli certificate and key signed by the CA, named
    <region>-<role>-<domain>.pem and <region>-<role>-<domain>-key.pem."""
    from app.cli.local.tls_pki import CertRequest, PkiError, create_cert

    role = _role(server, client, cli)
    if not ca_path or not key_path:
        raise click.UsageError("Please provide the ca" if not ca_path else "Please provide the key")
    region = cluster_region or region or os.environ.get("NOMAD_REGION") or "global"
    ips = tuple(_ip(a) for a in additional_ipaddress if a.strip())
    request = CertRequest(role, region, domain, days, additional_dnsname, ips)
    cert_file, key_file = Path(f"{request.file_prefix}.pem"), Path(f"{request.file_prefix}-key.pem")
    _refuse_existing("Certificate", cert_file)
    _refuse_existing("Key", key_file)
    ca_file, ca_key_file = Path(ca_path.replace("#DOMAIN#", domain, 1)), Path(key_path.replace("#DOMAIN#", domain, 1))
    try:
        ca_pem = ca_file.read_bytes()
        ca_key_pem = ca_key_file.read_bytes()
    except OSError as err:
        raise click.ClickException(f"Error reading CA: {err}") from None
    if role == "server":
        click.echo(_SERVER_WARNING, err=True)
    click.echo(f"==> Using CA file {ca_file} and CA key {ca_key_file}")
    try:
        pem = create_cert(request, ca_pem, ca_key_pem, _now())
    except PkiError as err:
        raise click.ClickException(str(err)) from None
    label = {"server": "Server", "client": "Client", "cli": "Cli"}[role]
    _write(cert_file, pem.cert, 0o644)
    click.echo(f"==> {label} Certificate saved to {cert_file}")
    _write(key_file, pem.key, 0o600)
    click.echo(f"==> {'CLI' if role == 'cli' else label} Certificate key saved to {key_file}")
