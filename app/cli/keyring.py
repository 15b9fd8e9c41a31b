"""`corral operator root keyring list | rotate | remove`: the keyring's keys, which seal variables and
sign workload identities (Nomad's command/operator_root_keyring_*.go layouts)."""

from __future__ import annotations

import json
import uuid

import click

from app.cli.support import http
from app.cli.support.output import date
from app.wire.api.api_keyring import RootKeyMetaJson


@click.group("root")
def root() -> None:
    """The cluster's root keyring."""


@root.group("keyring")
def keyring() -> None:
    """Keys that encrypt variables and sign workload identities."""


def _rows(keys: list[RootKeyMetaJson], verbose: bool) -> str:
    rows = [("Key", "State", "Create Time")] + [
        (k["KeyID"] if verbose else k["KeyID"][:8], k["State"], date(k["CreateTime"])) for k in keys
    ]
    widths = [max(len(str(row[i])) for row in rows) for i in range(3)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)


@keyring.command("list")
@click.option("-verbose", "verbose", is_flag=True, help="Show full key IDs.")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the keys as JSON.")
def list_(verbose: bool, as_json: bool) -> None:
    """List the keyring's keys."""
    keys = http.get("/v1/operator/keyring/keys")
    click.echo(json.dumps(keys, indent=2) if as_json else _rows(keys, verbose))


@keyring.command("rotate")
@click.option("-full", "full", is_flag=True, help="Re-encrypt every variable with the new key.")
@click.option("-verbose", "verbose", is_flag=True, help="Show the full key ID.")
def rotate(full: bool, verbose: bool) -> None:
    """Make a new active key; the old ones keep decrypting and verifying."""
    made = http.put("/v1/operator/keyring/rotate", None, {"full": ""} if full else None)
    click.echo(_rows([made["Key"]], verbose))


@keyring.command("remove")
@click.option(
    "-force",
    "force",
    is_flag=True,
    help="Remove the key even if running allocations may hold identities it signed (never one sealing variables).",
)
@click.argument("key_id", required=False)
def remove(force: bool, key_id: str | None) -> None:
    """Remove an inactive key (an ID or a unique prefix of one); the active key cannot be removed."""
    if not key_id:
        raise click.ClickException("This command requires one argument: <key ID>")  # exit 1, as Nomad
    wanted = _resolved(key_id.lower())
    http.request("DELETE", f"/v1/operator/keyring/key/{wanted}", params={"force": "true"} if force else None)
    click.echo(f"Removed encryption key {wanted}")


def _resolved(prefix: str) -> str:
    """A full key ID from a prefix, as Nomad resolves one (exit 1 when none or several match)."""
    try:
        return str(uuid.UUID(prefix))
    except ValueError:
        pass
    keys: list[RootKeyMetaJson] = http.get("/v1/operator/keyring/keys")
    matches = [k for k in keys if k["KeyID"].startswith(prefix)]
    if not matches:
        raise click.ClickException(f"No encryption key(s) with prefix or ID {prefix!r} found")
    if len(matches) > 1:
        raise click.ClickException(f"Prefix matched multiple keys\n\n{_rows(matches, True)}")
    return matches[0]["KeyID"]
