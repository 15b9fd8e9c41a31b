"""`corral scaling policy list|info`: the scaling policies of the jobs' `scaling` blocks, as
Nomad's CLI shows them (/v1/scaling/policies, /v1/scaling/policy/:id)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import cast

import click

from app.cli.support import http
from app.cli.support.deployment_view import short
from app.cli.support.output import columns, format_options, formatted, key_values
from app.wire.json import JsonObject


def target_text(target: Mapping[str, str]) -> str:
    """Nomad's formatScalingPolicyTarget: Namespace, Job, Group first, then any other key."""
    first = {"namespace": "", "job": "", "group": ""}
    others = []
    for key, value in target.items():
        if key.lower() in first:
            first[key.lower()] = f"{key}:{value}"
        else:
            others.append(f"{key}:{value}")
    return ",".join(part for part in [*first.values(), *others] if part)


def render_policies(stubs: list[JsonObject], verbose: bool) -> str:
    if not stubs:
        return "No policies found"
    targets = {id(s): target_text(cast(dict[str, str], s.get("Target") or {})) for s in stubs}
    rows = [["ID", "Enabled", "Type", "Target"]]
    for stub in sorted(stubs, key=lambda s: targets[id(s)]):
        enabled = "true" if stub.get("Enabled") else "false"
        rows.append([short(str(stub.get("ID", "")), verbose), enabled, str(stub.get("Type", "")), targets[id(stub)]])
    return "\n".join(columns(rows))


@click.group()
def scaling() -> None:
    """Scaling policies (the Nomad Autoscaler's input)."""


@scaling.group()
def policy() -> None:
    """List and inspect the jobs' scaling policies."""


@policy.command("list")
@click.option("-job", "job_id", help="Only this job's policies.")
@click.option("-type", "kind", help="Only policies whose type starts with this.")
@click.option("-verbose", "verbose", is_flag=True, help="Show full IDs.")
@format_options
def list_(job_id: str | None, kind: str | None, verbose: bool, as_json: bool, template: str | None) -> None:
    """List the scaling policies, ordered by target."""
    params = {k: v for k, v in (("job", job_id), ("type", kind)) if v}
    stubs = cast(list[JsonObject], http.get("/v1/scaling/policies", params) or [])
    if not formatted(stubs, as_json, template):
        click.echo(render_policies(stubs, verbose))


@policy.command()
@click.option("-verbose", "verbose", is_flag=True, help="Show the full ID.")
@format_options
@click.argument("policy_id", metavar="POLICY")
def info(policy_id: str, verbose: bool, as_json: bool, template: str | None) -> None:
    """Show one scaling policy; POLICY is its ID or a unique prefix of it."""
    if len(policy_id) < 2:
        raise click.ClickException("Identifier must contain at least two characters.")
    stubs = cast(list[JsonObject], http.get("/v1/scaling/policies") or [])
    matches = [s for s in stubs if str(s.get("ID", "")).startswith(policy_id)]
    if not matches:
        raise click.ClickException(f"No scaling policies with prefix or id {policy_id!r} found")
    if len(matches) > 1:
        raise click.ClickException(f"Prefix matched multiple scaling policies\n\n{render_policies(matches, verbose)}")
    found = cast(JsonObject, http.get(f"/v1/scaling/policy/{matches[0]['ID']}"))
    if formatted(found, as_json, template):
        return
    target = cast(dict[str, str], found.get("Target") or {})
    document = found.get("Policy")
    click.echo(
        "\n".join(
            key_values(
                [
                    ("ID", short(str(found.get("ID", "")), verbose)),
                    ("Enabled", "true" if found.get("Enabled") else "false"),
                    ("Target", target_text(target)),
                    ("Min", found.get("Min", 0)),
                    ("Max", found.get("Max", 0)),
                ]
            )
        )
    )
    click.echo("\nPolicy:")
    click.echo(json.dumps(document, indent=4) if document else "<empty>")
