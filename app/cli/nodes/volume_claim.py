"""`corral volume claim list|delete`: Nomad 1.10's sticky host volume claims, through the REST
API (GET /v1/volumes/claims, DELETE /v1/volumes/claim/:id). Deleting a claim frees its group to
take another volume at its next placement, and lets the volume be deleted."""

from __future__ import annotations

import sys
from urllib.parse import quote

import click

from app.cli.support import http
from app.cli.support.output import columns, format_options, formatted
from app.wire.api.api_host_volumes import TaskGroupHostVolumeClaimJson

SHORT = 8
WARNING = (
    'If you delete a volume claim, the allocation that uses this claim to "stick" to a particular volume ID '
    "will no longer use it upon its next reschedule or migration. The deployment of the task group the "
    "allocation runs will still claim another feasible volume ID during reschedule or replacement."
)


@click.group()
def claim() -> None:
    """Sticky host volume claims: the volume a task group keeps to."""


def render_claims(claims: list[TaskGroupHostVolumeClaimJson], verbose: bool = False) -> str:
    """Nomad's formatClaims."""
    if not claims:
        return "No task group host volume claims found"
    width = None if verbose else SHORT
    rows = [["ID", "Namespace", "Job ID", "Volume ID", "Volume Name"]]
    for c in claims:
        rows.append([c["ID"][:width], c["Namespace"], c["JobID"], c["VolumeID"][:width], c["VolumeName"]])
    return "\n".join(columns(rows))


@claim.command("list")
@click.option("-job", "--job", "job_id", default="", help="Only the claims of this job.")
@click.option("-group", "--group", "task_group", default="", help="Only the claims of this task group.")
@click.option("-volume-name", "--volume-name", "volume_name", default="", help="Only the claims of this volume name.")
@click.option("-verbose", "--verbose", is_flag=True, help="Full IDs.")
@format_options
@click.argument("claim_id", required=False, default="")
def list_claims(
    job_id: str, task_group: str, volume_name: str, verbose: bool, as_json: bool, template: str | None, claim_id: str
) -> None:
    """List the host volume claims (those whose ID starts with CLAIM_ID, if given)."""
    params = {
        "job_id": job_id or None,
        "task_group": task_group or None,
        "volume_name": volume_name or None,
        "prefix": claim_id or None,
    }
    try:
        found: list[TaskGroupHostVolumeClaimJson] = http.get("/v1/volumes/claims", params)
    except click.ClickException as err:
        raise click.ClickException(f"Error listing task group host volume claims: {err.message}") from None
    if not formatted(found, as_json, template):
        click.echo(render_claims(found, verbose))


@claim.command("delete")
@click.option("-y", "--yes", "auto_yes", is_flag=True, help="Delete without asking.")
@click.argument("claim_id")
def delete_claim(auto_yes: bool, claim_id: str) -> None:
    """Delete claim CLAIM_ID (a full ID, or the 8-character short one)."""
    if not auto_yes and not sys.stdin.isatty():
        raise click.ClickException("This command requires -y option when running in non-interactive mode")
    if not auto_yes:
        click.echo(WARNING, err=True)
        if not click.confirm(f"Are you sure you want to delete task group host volume claim {claim_id}?", default=True):
            return
    namespace: str | None = None
    if len(claim_id) == SHORT:
        found: list[TaskGroupHostVolumeClaimJson] = http.get("/v1/volumes/claims", {"prefix": claim_id})
        if not found:
            raise click.ClickException(f'No claim(s) with prefix "{claim_id}" found')
        if len(found) > 1:
            raise click.ClickException(f"Prefix matched multiple claims\n\n{render_claims(found, verbose=True)}")
        claim_id, namespace = found[0]["ID"], found[0]["Namespace"]
    try:
        http.request("DELETE", f"/v1/volumes/claim/{quote(claim_id)}", params={"namespace": namespace})
    except click.ClickException as err:
        raise click.ClickException(f"Error deleting claim: {err.message}") from None
    click.echo(f"Task group host volume claim {claim_id} successfully deleted")
