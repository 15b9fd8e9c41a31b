"""`corral job tag apply|unset`: Nomad 1.9's version tags, through
/v1/job/:id/versions/:name/tag."""

from __future__ import annotations

from urllib.parse import quote

import click

from app.cli.support import http


def _path(job_id: str, name: str) -> str:
    return f"/v1/job/{quote(job_id, safe='')}/versions/{quote(name, safe='')}/tag"


def _require(job_id: str, name: str | None) -> str:
    if not job_id:
        raise click.UsageError("A job name is required")
    if not name:
        raise click.UsageError("A version tag name is required")
    return name


@click.group()
def tag() -> None:
    """Name a version of a job (a tagged version is never pruned, and `job history -p
    -diff-tag` compares with it), or remove the name."""


@tag.command()
@click.option("-name", "name", help="The tag's name (required), unique within the job.")
@click.option("-description", "description", default="", help="What the version is.")
@click.option("-version", "version", type=click.IntRange(min=0), help="The version to tag (default: the current).")
@click.argument("job_id", metavar="JOB")
def apply(job_id: str, name: str | None, description: str, version: int | None) -> None:
    """Tag a version of JOB with -name (and -description)."""
    tag_name = _require(job_id, name)
    if version is None:
        version = int(http.get(f"/v1/job/{quote(job_id, safe='')}").get("Version", 0))
    try:
        http.put(_path(job_id, tag_name), {"Version": version, "Description": description})
    except http.ApiError as err:
        raise click.ClickException(f"Error tagging job version: {err.message}") from None
    click.echo(f'Job version {version} tagged with name "{tag_name}"')


@tag.command()
@click.option("-name", "name", help="The tag to remove (required).")
@click.argument("job_id", metavar="JOB")
def unset(job_id: str, name: str | None) -> None:
    """Remove the tag -name from JOB's version that has it."""
    tag_name = _require(job_id, name)
    try:
        http.request("DELETE", _path(job_id, tag_name))
    except http.ApiError as err:
        raise click.ClickException(f"Error tagging job version: {err.message}") from None
    click.echo(f'Tag "{tag_name}" removed from job "{job_id}"')
