"""`corral operator root keyring list | rotate`: the keyring's keys, which seal variables and
sign workload identities (Nomad's command/operator_root_keyring_*.go layouts)."""

from __future__ import annotations

import json

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
