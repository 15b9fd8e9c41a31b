"""`corral job plan`, `run`, `scale`, `revert`, `dispatch` and `periodic force`,
through the REST API."""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import quote

import click

from app.cli.jobs.job_dispatch_wait import wait_for_child
from app.cli.jobs.job_history import add_commands as add_history_commands
from app.cli.jobs.job_init import init as init_command
from app.cli.jobs.job_ops import add_commands as add_ops_commands
from app.cli.jobs.job_source import job_submission
from app.cli.jobs.job_status import add_commands as add_status_commands
from app.cli.jobs.job_status import next_launch_text
from app.cli.jobs.job_tag import tag as tag_group
from app.cli.jobs.plan_output import has_changes, render
from app.cli.support import http
from app.cli.support.monitor import follow, monitor, monitor_options
from app.cli.support.output import GoBoolCommand
from app.wire.api.api_jobs import JobDispatchRequest, JobRegisterRequest, JobRevertRequest
from app.wire.json import JsonObject

PLAN_NO_CHANGES, PLAN_CHANGES, PLAN_ERROR = 0, 1, 255  # Nomad's exit codes for `job plan`


@click.group()
def job() -> None:
    """Write, validate, plan, run, inspect, stop, scale, revert, dispatch and force-launch jobs on a corral server
    (CORRAL_ADDR, else NOMAD_ADDR, default http://127.0.0.1:4646). FILE is a Nomad HCL2 job file (parsed
    locally: variables, locals, functions, file()) or Nomad API JSON (a job, or {"Job": {...}})."""


def _var_pairs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    pairs: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected name=value, got {value!r}", ctx=ctx, param=param)
        pairs[key] = text
    return pairs


def hcl_options(command: Any) -> Any:
    """-var and -var-file, as Nomad's job run, plan and validate take them."""
    command = click.option(
        "-var-file",
        "--var-file",
        "var_files",
        multiple=True,
        type=click.Path(dir_okay=False),
        help="An HCL file of name = value lines setting the job file's variables; repeatable, later files win.",
    )(command)
    return click.option(
        "-var",
        "--var",
        "variables",
        multiple=True,
        callback=_var_pairs,
        metavar="NAME=VALUE",
        help="Set a variable declared in the job file (overrides -var-file and NOMAD_VAR_<name>); repeatable.",
    )(command)


def load_job(file: str, variables: dict[str, str] | None = None, var_files: tuple[str, ...] = ()) -> JsonObject:
    """The job in FILE as Nomad API JSON. HCL is parsed here, as Nomad's CLI does, so that
    file() reads beside the job file and -var, -var-file and NOMAD_VAR_* apply."""
    try:
        data = Path(file).read_bytes()
    except OSError as err:
        raise click.ClickException(f"cannot read job file {file}: {err.strerror or err}") from err
    if data.lstrip().startswith(b"{"):
        try:
            body = json.loads(data)
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise click.ClickException(f"{file}: invalid JSON: {err}") from err
        found = body.get("Job", body) if isinstance(body, dict) else None
        if not isinstance(found, dict):
            raise click.ClickException(f"{file}: expected a JSON object with the job")
        job: JsonObject = found
        return job
    files = []
    for var_file in var_files:
        try:
            files.append((var_file, Path(var_file).read_bytes().decode("utf-8")))
        except (OSError, UnicodeDecodeError) as err:
            raise click.ClickException(f"cannot read variable file {var_file}: {err}") from err
    from app.jobspec import JobSpecError, parse_hcl

    try:
        return parse_hcl(
            data,
            filename=file,
            variables=variables or {},
            var_files=files,
            environ=dict(os.environ),
            base_dir=Path(file).resolve().parent,
        )
    except JobSpecError as err:
        raise click.ClickException("\n".join(str(error) for error in err.errors)) from None


def _show_warnings(response: Mapping[str, object]) -> None:
    """The Warnings of a register, plan or validate answer."""
    warnings = response.get("Warnings")
    if isinstance(warnings, str) and warnings:
        click.echo(f"Job Warnings:\n{warnings}\n", err=True)


def _job_id(spec: JsonObject, file: str) -> str:
    job_id = spec.get("ID") or spec.get("Name")
    if not isinstance(job_id, str) or not job_id:
        raise click.ClickException(f"{file}: the job has no ID")
    return job_id


@job.command(cls=GoBoolCommand)
@hcl_options
@click.option(
    "-diff/-no-diff",
    "--diff/--no-diff",
    "diff",
    default=True,
    show_default=True,
    help="Show the diff between the registered job and FILE (Nomad's -diff=false hides it).",
)
@click.option("-verbose", "--verbose", is_flag=True, help="Accepted (Nomad's): the diff is always field by field.")
@click.argument("file")
def plan(file: str, variables: dict[str, str], var_files: tuple[str, ...], diff: bool, verbose: bool) -> None:
    """Dry-run the scheduler for the job in FILE: what would be created, destroyed or updated,
    which placements would fail, and which allocations would be preempted. Writes nothing.

    Exit codes, as Nomad's: 0 no allocations would be created or destroyed, 1 some would,
    255 an error."""
    try:
        spec = load_job(file, variables, var_files)
        job_id = _job_id(spec, file)
        response = http.post(f"/v1/job/{quote(job_id, safe='')}/plan", {"Job": spec, "Diff": True})
    except click.ClickException as err:
        err.show()
        sys.exit(PLAN_ERROR)
    del verbose
    _show_warnings(response)
    click.echo(render(response, job_id, file, diff))
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
@hcl_options
@monitor_options
@click.argument("file")
def run(
    file: str,
    check_index: int | None,
    variables: dict[str, str],
    var_files: tuple[str, ...],
    detach: bool,
    verbose: bool,
) -> None:
    """Register (or update) the job in FILE and monitor its evaluation until it finishes
    (allocations placed, placement failures; exit 2 if placement failed), or with -detach print
    the evaluation and return. Blocks corral keeps but does not act on (service, template,
    vault, ...) are listed as warnings."""
    spec = load_job(file, variables, var_files)
    body: JobRegisterRequest = {"Job": spec, "Submission": job_submission(file, variables, var_files)}
    if check_index is not None:
        body |= {"EnforceIndex": True, "JobModifyIndex": check_index}
    response = http.put("/v1/jobs", body)
    _show_warnings(response)
    if not detach and response.get("EvalID"):
        follow(response["EvalID"], detach, verbose)
        return
    click.echo("Job registration successful")
    # As Nomad's: a periodic job says when it launches next, a parameterized one nothing more
    # (it runs only when dispatched), any other the evaluation it was given.
    if spec.get("Periodic") and not spec.get("ParameterizedJob"):
        launch = next_launch_text(spec, datetime.now(UTC))
        if launch is not None:
            click.echo(f"Approximate next launch time: {launch}")
    elif not spec.get("ParameterizedJob") and response.get("EvalID"):
        click.echo(f"Evaluation ID: {response['EvalID']}")


@job.command()
@hcl_options
@click.argument("file")
def validate(file: str, variables: dict[str, str], var_files: tuple[str, ...]) -> None:
    """Check the job in FILE without registering it: the file is parsed here (position and
    valid names for unknown arguments and blocks) and the job is checked by the server
    (POST /v1/validate/job). Exits 1 when the job is invalid."""
    spec = load_job(file, variables, var_files)
    response = http.post("/v1/validate/job", {"Job": spec})
    _show_warnings(response)
    errors = response.get("ValidationErrors") or []
    if errors:
        for error in errors:
            click.echo(error, err=True)
        raise SystemExit(1)
    click.echo("Job validation successful")


job.add_command(init_command)


def _job_path(job_id: str, action: str = "") -> str:
    path = f"/v1/job/{quote(job_id, safe='')}"
    return f"{path}/{action}" if action else path


@job.group()
def periodic() -> None:
    """Periodic jobs (a `periodic` block with `cron` or `crons`): the leader launches a child
    job <JOB>/periodic-<unix time> at each scheduled time."""


@periodic.command()
@monitor_options
@click.argument("job_id", metavar="JOB")
def force(job_id: str, detach: bool, verbose: bool) -> None:
    """Launch the periodic job JOB now, whatever its schedule and prohibit_overlap say, and
    monitor the evaluation of the child job it creates (-detach: print it)."""
    response = http.post(_job_path(job_id, "periodic/force"), {})
    follow(response["EvalID"], detach, verbose)


def _meta_pairs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    meta: dict[str, str] = {}
    for value in values:
        key, sep, text = value.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected key=value, got {value!r}", ctx=ctx, param=param)
        meta[key] = text
    return meta


@job.command()
@click.argument("job_id", metavar="JOB")
@click.argument("args", nargs=-1, metavar="[GROUP] COUNT")
@monitor_options
def scale(job_id: str, args: tuple[str, ...], detach: bool, verbose: bool) -> None:
    """Set the count of one task group of JOB. GROUP may be left out when the job has a single
    group. The count must lie within the group's scaling { min, max } and no deployment of the
    job may be active; the new version and its job-scaling evaluation are written together.
    The evaluation is monitored unless -detach."""
    if len(args) not in (1, 2):
        raise click.UsageError("expected JOB [GROUP] COUNT")
    try:
        count = int(args[-1])
    except ValueError as err:
        raise click.BadParameter(f"{args[-1]!r} is not an integer", param_hint="COUNT") from err
    group = args[0] if len(args) == 2 else _only_group(job_id)
    body = {"Count": count, "Target": {"Group": group}, "Message": "submitted using the corral CLI"}
    response = http.post(_job_path(job_id, "scale"), body)
    click.echo(f"Job {job_id} group {group} scaled to {count}")
    follow(response.get("EvalID"), detach, verbose)


def _only_group(job_id: str) -> str:
    spec = http.get(_job_path(job_id))
    names = [g.get("Name") for g in spec.get("TaskGroups") or []]
    if len(names) != 1:
        raise click.UsageError(f"job {job_id} has {len(names)} task groups ({', '.join(map(str, names))}); name one")
    return str(names[0])


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
@click.option(
    "-idempotency-token",
    "idempotency_token",
    help="Dispatch at most one child with this token: while that child exists, a dispatch with "
    "the same token returns it and creates nothing.",
)
@click.option("-id-prefix-template", "id_prefix_template", help="Put this into the child's ID after 'dispatch-'.")
@click.option("-priority", "priority", type=click.IntRange(1, 100), help="The child's priority (default: the job's).")
@click.option(
    "-wait",
    "--wait",
    "wait",
    is_flag=True,
    help="After the evaluation, wait until every allocation of the child is terminal: exit 0, or 2 if one failed.",
)
@monitor_options
@click.argument("job_id", metavar="JOB")
@click.argument("input_source", metavar="[INPUT]", required=False, type=click.File("rb"))
def dispatch(
    job_id: str,
    input_source: BinaryIO | None,
    meta: dict[str, str],
    payload_file: BinaryIO | None,
    idempotency_token: str | None,
    id_prefix_template: str | None,
    priority: int | None,
    wait: bool,
    detach: bool,
    verbose: bool,
) -> None:
    """Dispatch the parameterized job JOB: create the child job <JOB>/dispatch-<unix time>-<8
    hex> with the given meta and payload, print it, and monitor its evaluation (-detach: print it).
    The payload is INPUT, a file ('-': standard input), as Nomad takes it, or -payload-file.
    With -wait the child is followed until it is dead (app/cli/jobs/job_dispatch_wait.py)."""
    if input_source is not None and payload_file is not None:
        raise click.UsageError("give the payload as INPUT or -payload-file, not both")
    payload_file = payload_file or input_source
    body: JobDispatchRequest = {"Meta": meta, "IdPrefixTemplate": id_prefix_template or "", "Priority": priority or 0}
    if payload_file is not None:
        body["Payload"] = base64.b64encode(payload_file.read()).decode()
    params = {"idempotency_token": idempotency_token} if idempotency_token else None
    response = http.post(_job_path(job_id, "dispatch"), body, params)
    eval_id = response.get("EvalID") or ""
    click.echo(f"Dispatched Job ID = {response['DispatchedJobID']}")
    if not eval_id:  # an earlier dispatch with the same idempotency token: nothing to monitor
        return
    if detach:
        click.echo(f"Evaluation ID     = {eval_id}")
    elif wait:
        if monitor(eval_id, verbose):
            raise SystemExit(1)  # Nomad: a failed evaluation ends -wait with 1
        click.echo("")
        code = wait_for_child(response["DispatchedJobID"], verbose)
        if code:
            raise SystemExit(code)
    else:
        follow(eval_id, detach, verbose)


@job.command()
@click.option(
    "-check-version",
    "--check-version",
    "check_version",
    type=click.IntRange(min=0),
    help="Revert only if the job's current version is still this one (EnforcePriorVersion).",
)
@click.argument("job_id", metavar="JOB")
@click.argument("version", type=click.IntRange(min=0))
@monitor_options
def revert(job_id: str, version: int, check_version: int | None, detach: bool, verbose: bool) -> None:
    """Register VERSION of JOB again, as a new version with its job-register evaluation (see
    `corral job history`), monitored unless -detach. Reverting to the current version is an error."""
    body: JobRevertRequest = {"JobID": job_id, "JobVersion": version}
    if check_version is not None:
        body["EnforcePriorVersion"] = check_version
    response = http.post(_job_path(job_id, "revert"), body)
    click.echo(f"Job {job_id} reverted to version {version}")
    follow(response.get("EvalID"), detach, verbose)


add_status_commands(job)
add_ops_commands(job)
add_history_commands(job)
job.add_command(tag_group)
