"""`corral job history`: the kept versions of a job in Nomad's layout, with -p (the diff of each
version against the one before it, or against -diff-version / -diff-tag), -full, -version,
-json and -t."""

from __future__ import annotations

import json
from typing import cast
from urllib.parse import quote

import click

from app.cli.jobs.diff_output import format_job_diff
from app.cli.support import http
from app.cli.support.output import date, formatted
from app.wire.job_diff import JobDiffJson
from app.wire.json import JsonObject


def _block(version: JsonObject, diff: JobDiffJson | None, full: bool) -> str:
    """One version as Nomad's `Key = value` block (columnize with ' = ' as glue, untrimmed)."""
    rows = [
        ("Version", str(version.get("Version", 0))),
        ("Stable", "true" if version.get("Stable") else "false"),
        ("Submit Date", date(version.get("SubmitTime"))),
    ]
    tag = version.get("VersionTag")
    if isinstance(tag, dict):
        rows.append(("Tag Name", str(tag.get("Name", ""))))
        if tag.get("Description"):
            rows.append(("Tag Description", str(tag["Description"])))
    if diff is not None and diff.get("Type") != "None":
        rows.append(("Diff", "\n" + format_job_diff(diff).strip()))
    if full:
        rows.append(("Full", "JSON Job:\n" + json.dumps(version, indent=4)))
    width = max(len(key) for key, _ in rows)
    return "\n".join(f"{key.ljust(width)} = {value}" for key, value in rows)


def add_commands(job: click.Group) -> None:
    @job.command()
    @click.option("-p", "diff", is_flag=True, help="Show each version's changes against a reference version.")
    @click.option("-diff-tag", "diff_tag", help="With -p, compare every version with the version of this tag.")
    @click.option(
        "-diff-version", "diff_version", type=click.IntRange(min=0), help="With -p, compare with this version."
    )
    @click.option("-full", "full", is_flag=True, help="Show the full job of each version as JSON.")
    @click.option("-version", "only", type=click.IntRange(min=0), help="Show only this version.")
    @click.option("-json", "as_json", is_flag=True, help="Print the versions as JSON.")
    @click.option("-t", "template", metavar="TEMPLATE", help="Format the versions with a Go template subset.")
    @click.argument("job_id", metavar="JOB")
    def history(
        job_id: str,
        diff: bool,
        diff_tag: str | None,
        diff_version: int | None,
        full: bool,
        only: int | None,
        as_json: bool,
        template: str | None,
    ) -> None:
        """Show the kept versions of JOB, newest first (CORRAL_JOB_MAX_VERSIONS are kept; tagged
        ones are never pruned); -p shows what each version changed, as Nomad's `job history -p`."""
        if (as_json or template is not None) and (diff or full):
            raise click.UsageError("-json and -t are exclusive with -p and -full")
        if (diff_tag or diff_version is not None) and not diff:
            raise click.UsageError("-diff-tag and -diff-version can only be used with -p")
        if diff_tag and diff_version is not None:
            raise click.UsageError("-diff-tag and -diff-version are mutually exclusive")
        params = {"diffs": "true"} if diff else {}
        if diff_tag:
            params["diff_tag"] = diff_tag
        if diff_version is not None:
            params["diff_version"] = str(diff_version)
        answer = http.get(f"/v1/job/{quote(job_id, safe='')}/versions", params)
        # The server's JobVersionsResponse: Versions are jobs, Diffs Nomad's JobDiffs.
        versions = cast(list[JsonObject], answer.get("Versions") or [])
        diffs = cast(list[JobDiffJson], answer.get("Diffs") or [])
        pairs = [(v, diffs[i] if i < len(diffs) else None) for i, v in enumerate(versions)]
        if only is not None:
            pairs = [(v, d) for v, d in pairs if v.get("Version") == only]
            if not pairs:
                raise click.ClickException("Error printing job history for non-existing job or job version")
            if formatted(pairs[0][0], as_json, template):
                return
        elif formatted(versions, as_json, template):
            return
        click.echo("\n\n".join(_block(v, d, full) for v, d in pairs))
