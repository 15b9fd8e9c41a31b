"""The `Submission` that `job run` sends with a job, as Nomad's CLI builds it (jobspec2's
submissionFromJob): the file's text and format (`hcl2`, or `json` for a JSON file), the -var
flags over the NOMAD_VAR_* environment as VariableFlags, and the -var-file files' contents as
Variables. The server keeps it with the version (GET /v1/job/:id/submission, `job inspect -hcl`)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import quote

import click

from app.cli.support import http
from app.wire.json import JsonObject

ENV_PREFIX = "NOMAD_VAR_"


def job_submission(
    file: str, variables: Mapping[str, str], var_files: tuple[str, ...], environ: Mapping[str, str] | None = None
) -> JsonObject:
    try:
        source = Path(file).read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise click.ClickException(f"cannot read job file {file}: {err}") from err
    env = os.environ if environ is None else environ
    flags = {name[len(ENV_PREFIX) :]: value for name, value in env.items() if name.startswith(ENV_PREFIX)}
    flags.update(variables)
    contents = []
    for var_file in var_files:
        try:
            contents.append(Path(var_file).read_text(encoding="utf-8").rstrip("\n"))
        except (OSError, UnicodeDecodeError) as err:
            raise click.ClickException(f"cannot read variable file {var_file}: {err}") from err
    return {
        "Source": source,
        "Format": "json" if source.lstrip().startswith("{") else "hcl2",
        "VariableFlags": dict(flags),
        "Variables": "\n\n".join(contents),
    }


def show_source(job_id: str, version: int | None, with_vars: bool) -> None:
    """`job inspect -hcl`: the source the job's current (or -version) version was submitted as;
    -with-vars adds, on standard error, how to run it again with its variables (Nomad's hint)."""
    path = f"/v1/job/{quote(job_id, safe='')}"
    if version is None:
        version = int(http.get(path).get("Version", 0))
    try:
        found = http.get(f"{path}/submission", {"version": str(version)})
    except http.ApiError as err:
        if err.status != 404:
            raise
        raise click.ClickException(
            f"Error inspecting job: job {job_id!r} with version {version} couldn't be found"
        ) from None
    click.echo(found.get("Source") or "")
    if with_vars:
        click.echo(_rerun_hint(job_id, found.get("VariableFlags") or {}, found.get("Variables") or ""), err=True)


def _rerun_hint(job_id: str, flags: Mapping[str, str], variables: str) -> str:
    ns = http.namespace() or "default"
    args = ["-namespace", ns]
    for pair in sorted(f"{k}={v}" for k, v in flags.items()):
        args += ["-var", pair]
    for line in variables.splitlines():
        if line.strip():
            args += ["-var", line.strip()]
    return (
        "\nTo run this job as originally submitted:\n\n"
        f"$ corral job inspect -namespace {ns} -hcl {job_id} |\n"
        f"    corral job run {' '.join([*args, job_id])}\n"
    )
