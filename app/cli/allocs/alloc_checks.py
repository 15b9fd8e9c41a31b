"""`corral alloc checks ALLOC`: the latest result of each Nomad service check of an allocation,
run by its client (GET /v1/allocation/:id/checks), in Nomad's layout: one block per check."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from app.cli.allocs.alloc import alloc, resolve
from app.cli.support import http
from app.cli.support.output import format_options, formatted, key_values
from app.wire.api.api_client import CheckQueryResultJson


def _when(seconds: int) -> str:
    """Nomad's task time format (Timestamp is in seconds)."""
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def render(checks: dict[str, CheckQueryResultJson]) -> list[str]:
    lines = [f"Status of {len(checks)} Nomad Service Checks", ""]
    for check in checks.values():
        pairs: list[tuple[str, object]] = [
            ("ID", check.get("ID", "")),
            ("Name", check.get("Check", "")),
            ("Group", check.get("Group", "")),
            ("Task", check.get("Task") or "(group)"),
            ("Service", check.get("Service", "")),
            ("Status", check.get("Status", "")),
        ]
        if check.get("StatusCode", 0) > 0:
            pairs.append(("StatusCode", check["StatusCode"]))
        pairs += [
            ("Mode", check.get("Mode", "")),
            ("Timestamp", _when(check.get("Timestamp", 0))),
            ("Output", check.get("Output", "")),
        ]
        lines += [*key_values(pairs), ""]
    return lines


@alloc.command("checks")
@click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs.")
@format_options
@click.argument("alloc_id")
def checks(alloc_id: str, verbose: bool, as_json: bool, template: str | None) -> None:
    """Show the latest result of each Nomad service check of ALLOC_ID (a full ID or a unique
    prefix), as its client last ran them."""
    found: dict[str, CheckQueryResultJson] = http.get(f"/v1/allocation/{resolve(alloc_id)}/checks")
    if formatted(found, as_json, template):
        return
    click.echo("\n".join(render(found)).rstrip("\n"))
