"""`corral job plan`, `run`, `dispatch` and `periodic force`, through the REST API."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote

import click

from app.cli import http
from app.cli.plan_output import has_changes, render

PLAN_NO_CHANGES, PLAN_CHANGES, PLAN_ERROR = 0, 1, 255  # Nomad's exit codes for `job plan`


@click.group()
def job() -> None:
    """Plan, run, dispatch and force-launch jobs on a corral server (CORRAL_ADDR, else NOMAD_ADDR, default
    http://127.0.0.1:4646). FILE is a Nomad HCL2 job file or Nomad API JSON (a job, or
    {"Job": {...}})."""


def load_job(file: str) -> dict[str, Any]:
    """The job in FILE as Nomad API JSON; HCL is parsed by the server (/v1/jobs/parse)."""
    try:
        text = Path(file).read_text()
    except OSError as err:
        raise click.ClickException(f"cannot read job file {file}: {err.strerror or err}") from err
    if text.lstrip().startswith("{"):
        try:
            body = json.loads(text)
        except json.JSONDecodeError as err:
            raise click.ClickException(f"{file}: invalid JSON: {err}") from err
        found = body.get("Job", body) if isinstance(body, dict) else None
        if not isinstance(found, dict):
            raise click.ClickException(f"{file}: expected a JSON object with the job")
        return found
    parsed = http.post("/v1/jobs/parse", {"JobHCL": text})
    if not isinstance(parsed, dict):
        raise click.ClickException(f"{file}: the server did not return a job")
    return parsed


def _job_id(spec: dict[str, Any], file: str) -> str:
    job_id = spec.get("ID") or spec.get("Name")
    if not isinstance(job_id, str) or not job_id:
        raise click.ClickException(f"{file}: the job has no ID")
    return job_id


@job.command()
@click.argument("file")
def plan(file: str) -> None:
    """Dry-run the scheduler for the job in FILE: what would be created, destroyed or updated,
    which placements would fail, and which allocations would be preempted. Writes nothing.

    Exit codes, as Nomad's: 0 no allocations would be created or destroyed, 1 some would,
    255 an error."""
    try:
        spec = load_job(file)
        job_id = _job_id(spec, file)
        response = http.post(f"/v1/job/{quote(job_id, safe='')}/plan", {"Job": spec, "Diff": True})
    except click.ClickException as err:
        err.show()
        sys.exit(PLAN_ERROR)
    click.echo(render(response, job_id, file))
    sys.exit(PLAN_CHANGES if has_changes(response) else PLAN_NO_CHANGES)


@job.command()
@click.option(
    "-check-index",
    "--check-index",
    "check_index",
    type=click.IntRange(min=0),
    help="Register only if the job's modify index still equals this (0: the job must not exist). "
    "`corral job plan` prints the index to use.",
)
@click.argument("file")
def run(file: str, check_index: int | None) -> None:
    """Register (or update) the job in FILE and print its evaluation. The evaluation is
    scheduled by the workers; follow it with GET /v1/evaluation/:id."""
    spec = load_job(file)
    body: dict[str, Any] = {"Job": spec}
    if check_index is not None:
        body.update(EnforceIndex=True, JobModifyIndex=check_index)
    response = http.put("/v1/jobs", body)
    click.echo("Job registration successful")
    if response.get("EvalID"):
        click.echo(f"Evaluation ID: {response['EvalID']}")
    click.echo(f"Job Modify Index: {response.get('JobModifyIndex', 0)}")


def _job_path(job_id: str, action: str) -> str:
    return f"/v1/job/{quote(job_id, safe='')}/{action}"


@job.group()
def periodic() -> None:
    """Periodic jobs (a `periodic` block with `cron` or `crons`): the leader launches a child
    job <JOB>/periodic-<unix time> at each scheduled time."""


@periodic.command()
@click.argument("job_id", metavar="JOB")
def force(job_id: str) -> None:
    """Launch the periodic job JOB now, whatever its schedule and prohibit_overlap say, and
    print the evaluation of the child job it creates."""
    response = http.post(_job_path(job_id, "periodic/force"), {})
    click.echo(f"Evaluation ID: {response['EvalID']}")


def _meta_pairs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    meta: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected key=value, got {value!r}", ctx=ctx, param=param)
        meta[key] = text
    return meta


@job.command()
@click.option(
    "-meta",
    "--meta",
    "meta",
    multiple=True,
    callback=_meta_pairs,
    metavar="KEY=VALUE",
    help="Meta for the dispatched job; repeat for several keys. Every key must be in the job's "
    "meta_required or meta_optional, and every meta_required key must be given.",
)
@click.option(
    "-payload-file",
    "--payload-file",
    "payload_file",
    type=click.File("rb"),
    help="File whose contents are the payload (at most 16 KiB; '-' reads standard input). "
    "Required or forbidden by the job's parameterized payload setting.",
)
@click.argument("job_id", metavar="JOB")
def dispatch(job_id: str, meta: dict[str, str], payload_file: BinaryIO | None) -> None:
    """Dispatch the parameterized job JOB: create the child job <JOB>/dispatch-<unix time>-<8
    hex> with the given meta and payload, and print it with its evaluation."""
    body: dict[str, Any] = {"Meta": meta}
    if payload_file is not None:
        body["Payload"] = base64.b64encode(payload_file.read()).decode()
    response = http.post(_job_path(job_id, "dispatch"), body)
    click.echo(f"Dispatched Job ID = {response['DispatchedJobID']}")
    click.echo(f"Evaluation ID     = {response['EvalID']}")
