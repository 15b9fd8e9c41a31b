"""`corral job status [JOB]` and `corral job stop [-purge] JOB`, in Nomad's layout, through the
REST API."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from urllib.parse import quote

import click

from app.cli.jobs.job_source import show_source
from app.cli.support import http
from app.cli.support.deployment_view import render_list, render_status, short
from app.cli.support.monitor import alloc_metric_lines, follow, monitor_options
from app.cli.support.output import ago, columns, format_options, formatted, key_values
from app.wire.allocation import AllocationListStubJson
from app.wire.api.api_jobs import JobStatusJson
from app.wire.deployment import DeploymentJson
from app.wire.evaluation import EvaluationJson
from app.wire.job import JobListStubJson, JobSpec, JobSummaryJson

SUMMARY_COLUMNS = ("Queued", "Starting", "Running", "Failed", "Complete", "Lost", "Unknown")


def _path(job_id: str, action: str = "") -> str:
    path = f"/v1/job/{quote(job_id, safe='')}"
    return f"{path}/{action}" if action else path


def render_jobs(jobs: list[JobListStubJson]) -> str:
    if not jobs:
        return "No running jobs"
    rows = [["ID", "Type", "Priority", "Status", "Submit Date"]]
    for j in jobs:
        rows.append([str(j["ID"]), str(j["Type"]), str(j["Priority"]), _status(j), _date(j.get("SubmitTime", 0))])
    return "\n".join(columns(rows))


def _status(job: JobSpec | JobListStubJson) -> str:
    """Nomad prints "dead (stopped)" for a job stopped by hand."""
    status = str(job["Status"])
    return f"{status} (stopped)" if job.get("Stop") and status == "dead" else status


def _date(nanos: int) -> str:
    return datetime.fromtimestamp(int(nanos) / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if nanos else ""


def basic_block(job: JobSpec, now: datetime | None = None) -> list[str]:
    """Nomad's key = value block for one job, with the next launch of a periodic job."""
    pairs: list[tuple[str, object]] = [
        ("ID", job["ID"]),
        ("Name", job.get("Name") or job["ID"]),
        ("Submit Date", _date(job.get("SubmitTime", 0))),
        ("Type", job["Type"]),
        ("Priority", job["Priority"]),
        ("Datacenters", ",".join(job.get("Datacenters") or [])),
        ("Namespace", job.get("Namespace", "default")),
        ("Node Pool", job.get("NodePool", "default")),
        ("Status", _status(job)),
        ("Periodic", str(bool(job.get("Periodic"))).lower()),
        ("Parameterized", str(bool(job.get("ParameterizedJob"))).lower()),
    ]
    if job.get("Periodic") and not job.get("ParameterizedJob"):
        launch = next_launch_text(job, now or datetime.now(UTC))
        if launch is not None:
            pairs.append(("Next Periodic Launch", launch))
    return key_values(pairs)


def next_launch_text(job: Mapping[str, object], now: datetime) -> str | None:
    """Nomad's "Next Periodic Launch": none for a stopped job, nothing for a schedule it cannot read."""
    if job.get("Stop"):
        return "none (job stopped)"
    from app.values.cron import next_launch

    periodic = job.get("Periodic")
    if not isinstance(periodic, Mapping) or not periodic:
        return None
    try:
        at = next_launch(periodic, now)
    except (ValueError, KeyError, LookupError):  # a bad spec or zone: Nomad leaves the line out
        return None
    if at is None:
        return None
    return f"{at.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%SZ')} ({_duration(at - now)} from now)"


def _duration(delta: timedelta) -> str:
    """Go's Duration text at a second's precision (1h2m3s, 4m0s, 59s)."""
    seconds = max(int(delta.total_seconds()), 0)
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    return f"{minutes}m{secs}s" if minutes else f"{secs}s"


def summary_lines(job: JobSpec, summary: JobSummaryJson) -> list[str]:
    """The per-group summary (plain jobs) and the children's (periodic, parameterized or with children)."""
    lines: list[str] = []
    periodic, parameterized = bool(job.get("Periodic")), bool(job.get("ParameterizedJob"))
    if not periodic and not parameterized:
        groups = summary.get("Summary") or {}
        rows = [["Task Group", *SUMMARY_COLUMNS]]
        rows += [[name, *(str(groups[name].get(c, 0)) for c in SUMMARY_COLUMNS)] for name in sorted(groups)]
        lines += ["", "Summary", *columns(rows)]
    children = summary.get("Children") or {}
    counts = [int(children.get("Pending") or 0), int(children.get("Running") or 0), int(children.get("Dead") or 0)]
    if children and (periodic or parameterized or sum(counts)):
        title = "Parameterized Job Summary" if parameterized else "Children Job Summary"
        lines += ["", title, *columns([["Pending", "Running", "Dead"], [str(c) for c in counts]])]
    return lines


def children_lines(job: JobSpec, children: list[JobListStubJson]) -> list[str]:
    """Nomad's "Previously Launched Jobs" (periodic) or "Dispatched Jobs" (parameterized)."""
    parameterized = bool(job.get("ParameterizedJob"))
    own = [c for c in children if c.get("ParentID") == job["ID"]]
    if not own:
        missing = "No dispatched instances of parameterized job found" if parameterized else None
        return ["", missing or "No instances of periodic job found"]
    title = "Dispatched Jobs" if parameterized else "Previously Launched Jobs"
    rows = [["ID", "Status"], *([str(c["ID"]), str(c.get("Status", ""))] for c in own)]
    return ["", title, *columns(rows)]


def parameterized_lines(job: JobSpec) -> list[str]:
    spec = job.get("ParameterizedJob") or {}
    return [
        "",
        "Parameterized Job",
        *key_values(
            [
                ("Payload", spec.get("Payload") or "optional"),
                ("Required Metadata", ", ".join(spec.get("MetaRequired") or [])),
                ("Optional Metadata", ", ".join(spec.get("MetaOptional") or [])),
            ]
        ),
    ]


def eval_lines(evals: list[EvaluationJson], verbose: bool) -> list[str]:
    """Nomad's "Evaluations" section of `job status -evals` (or -verbose)."""
    rows = [["ID", "Priority", "Triggered By", "Status", "Placement Failures"]]
    for e in sorted(evals, key=lambda e: -int(e.get("CreateIndex", 0))):
        failures = "true" if e.get("FailedTGAllocs") else "false"
        if e.get("Status") == "blocked":
            failures = "N/A - In Progress"
        rows.append(
            [
                short(str(e["ID"]), verbose),
                str(e.get("Priority", "")),
                str(e.get("TriggeredBy", "")),
                str(e.get("Status", "")),
                failures,
            ]
        )
    return ["", "Evaluations", *columns(rows)]


def render_job(
    job: JobSpec,
    summary: JobSummaryJson,
    allocs: list[AllocationListStubJson],
    deployment: DeploymentJson | None,
    verbose: bool = False,
    evals: list[EvaluationJson] | None = None,
    show_evals: bool = False,
) -> str:
    lines = [*basic_block(job), *summary_lines(job, summary)]
    if verbose or show_evals:
        lines += eval_lines(evals or [], verbose)
    lines += placement_failure(evals or [])
    if deployment is not None:
        lines += ["", "Latest Deployment", *render_status(deployment, verbose).splitlines()]
    lines += ["", "Allocations", render_allocs(allocs, verbose, modified=False)]
    return "\n".join(lines)


def render_allocs(allocs: list[AllocationListStubJson], verbose: bool, modified: bool = True) -> str:
    """Allocation stubs, newest first, in Nomad's columns (formatAllocListStubs); `job status`
    prints the creation date and no modification time."""
    if not allocs:
        return "No allocations placed"
    header = ["ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Created"]
    rows = [[*header, "Modified"] if modified else header]
    for a in sorted(allocs, key=lambda a: -int(a.get("CreateIndex", 0))):
        row = [
            short(str(a["ID"]), verbose),
            short(str(a.get("NodeID", "")), verbose),
            str(a["TaskGroup"]),
            str(a.get("JobVersion", 0)),
            str(a["DesiredStatus"]),
            str(a["ClientStatus"]),
        ]
        times = [ago(a.get("CreateTime")), ago(a.get("ModifyTime"))] if modified else [_date(a.get("CreateTime", 0))]
        rows.append(row + times)
    return "\n".join(columns(rows))


def placement_failure(evals: list[EvaluationJson]) -> list[str]:
    """Nomad's "Placement Failure" section: the newest evaluation's FailedTGAllocs, shown while
    the job still has a blocked evaluation waiting for capacity (or when the newest evaluation
    itself failed to place)."""
    ordered = sorted(evals, key=lambda e: -int(e.get("CreateIndex", 0)))
    failed = next((e for e in ordered if e.get("FailedTGAllocs")), None)
    blocked = any(e.get("Status") == "blocked" for e in ordered)
    if failed is None or not (blocked or failed is ordered[0]):
        return []
    lines = ["", "Placement Failure"]
    failures = failed.get("FailedTGAllocs") or {}
    for group in sorted(failures):
        lines.append(f'Task Group "{group}":')
        lines += alloc_metric_lines(failures[group], "  ")
    return lines


def add_commands(job: click.Group) -> None:
    @job.command()
    @click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs instead of the first 8 characters.")
    @click.option("-short", "--short", "short_", is_flag=True, help="Only the job's key = value block.")
    @click.option("-evals", "--evals", "show_evals", is_flag=True, help="Also list the job's evaluations.")
    @click.option(
        "-all-allocs",
        "--all-allocs",
        "all_allocs",
        is_flag=True,
        help="Accepted (Nomad's): every allocation is listed.",
    )
    @format_options
    @click.argument("job_id", metavar="[JOB]", required=False)
    def status(
        job_id: str | None,
        verbose: bool,
        short_: bool,
        show_evals: bool,
        all_allocs: bool,
        as_json: bool,
        template: str | None,
    ) -> None:
        """Without JOB, list the jobs (ID, type, priority, status, submit date). With JOB, show it:
        its status (derived from its allocations and evaluations, as Nomad does), the summary per
        task group, its latest deployment and its allocations, newest first; a periodic job its
        next launch and the jobs it launched, a parameterized job its dispatched jobs. -json and -t
        format Nomad's per-job object (Summary, Allocations, LatestDeployment, Evaluations)."""
        del all_allocs  # corral's allocation list is never trimmed to the latest version
        if as_json and template:
            raise click.UsageError("Both json and template formatting are not allowed")
        if job_id is None:
            jobs = http.get("/v1/jobs")
            if (as_json or template) and jobs:
                formatted([_status_object(str(j["ID"]), j.get("Namespace")) for j in jobs], as_json, template)
                return
            click.echo(render_jobs(jobs))
            return
        found = http.get(_path(job_id))
        if as_json or template:
            formatted([_status_object(job_id, found.get("Namespace"))], as_json, template)
            return
        if short_:
            click.echo("\n".join(basic_block(found)))
            return
        click.echo(_render_one(found, verbose, show_evals))

    @job.command()
    @click.option("-purge", "--purge", is_flag=True, help="Also remove the job from the API (GC removes its rows).")
    @click.option(
        "-yes", "--yes", is_flag=True, help="Answer yes to the confirmation (corral asks none: JOB is exact)."
    )
    @click.option(
        "-no-shutdown-delay",
        "--no-shutdown-delay",
        "no_shutdown_delay",
        is_flag=True,
        help="Kill the tasks without waiting out the group's and tasks' shutdown_delay.",
    )
    @click.option("-global", "--global", "global_", is_flag=True, help="Stop in every region (corral has one).")
    @monitor_options
    @click.argument("job_id", metavar="JOB")
    def stop(
        job_id: str, purge: bool, yes: bool, no_shutdown_delay: bool, global_: bool, detach: bool, verbose: bool
    ) -> None:
        """Stop JOB: a new version with Stop set and a job-deregister evaluation, after which the
        scheduler stops its allocations. Monitors the evaluation (-detach: prints it)."""
        del yes  # Nomad confirms only a job matched by prefix; corral matches job IDs exactly
        flags = {"purge": purge, "no_shutdown_delay": no_shutdown_delay, "global": global_}
        params = {name: "true" for name, on in flags.items() if on} or None
        response = http.request("DELETE", _path(job_id), params=params)
        if detach or not response.get("EvalID"):
            click.echo(f"Evaluation ID: {response.get('EvalID') or ''}".rstrip())
            return
        follow(response["EvalID"], detach, verbose)

    @job.command()
    @click.option("-version", "--version", "version", type=click.IntRange(min=0), help="A kept version of the job.")
    @click.option("-hcl", "hcl", is_flag=True, help="Print the source the job (version) was submitted as.")
    @click.option("-with-vars", "with_vars", is_flag=True, help="With -hcl: how to run it again with its variables.")
    @format_options
    @click.argument("job_id", metavar="JOB")
    def inspect(
        job_id: str, version: int | None, hcl: bool, with_vars: bool, as_json: bool, template: str | None
    ) -> None:
        """Print JOB as the API holds it (-version: one of its kept versions, see `job history`):
        `{"Job": {...}}` in JSON by default, as Nomad; -json prints the job itself, -t formats it;
        -hcl the HCL (or JSON) text it was submitted as."""
        if hcl and as_json:
            raise click.UsageError("can only use one of -hcl or -json")
        if with_vars and not hcl:
            raise click.UsageError("can only use -with-vars with -hcl")
        if hcl:
            show_source(job_id, version, with_vars)
            return
        found = http.get(_path(job_id)) if version is None else _version(job_id, version)
        if not formatted(found, as_json, template):
            formatted({"Job": found}, True, None)

    @job.command()
    @click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs.")
    @format_options
    @click.argument("job_id", metavar="JOB")
    def allocs(job_id: str, verbose: bool, as_json: bool, template: str | None) -> None:
        """List JOB's allocations, newest first, in Nomad's columns."""
        found = http.get(_path(job_id, "allocations"))
        if not formatted(found, as_json, template):
            click.echo(render_allocs(found, verbose))

    @job.command()
    @click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs.")
    @format_options
    @click.argument("job_id", metavar="JOB")
    def deployments(job_id: str, verbose: bool, as_json: bool, template: str | None) -> None:
        """List JOB's deployments, newest first."""
        found = http.get(_path(job_id, "deployments"))
        if not formatted(found, as_json, template):
            click.echo(render_list(found, verbose))


def _version(job_id: str, version: int) -> JobSpec:
    versions = http.get(_path(job_id, "versions")).get("Versions") or []
    for found in versions:
        if int(found.get("Version", -1)) == version:
            chosen: JobSpec = found
            return chosen
    raise click.ClickException(f"Error inspecting job: job {job_id!r} has no version {version}")


def _status_object(job_id: str, namespace: object) -> JobStatusJson:
    """Nomad's JSON of `job status -json`: the job's summary, allocations, latest deployment and evaluations."""
    params = {"namespace": namespace} if isinstance(namespace, str) and namespace else None
    return {
        "Summary": http.get(_path(job_id, "summary"), params),
        "Allocations": http.get(_path(job_id, "allocations"), params),
        "LatestDeployment": http.get(_path(job_id, "deployment"), params),
        "Evaluations": http.get(_path(job_id, "evaluations"), params),
    }


def _render_one(found: JobSpec, verbose: bool, show_evals: bool) -> str:
    job_id = str(found["ID"])
    summary = http.get(_path(job_id, "summary"))
    if found.get("Periodic") or found.get("ParameterizedJob"):
        lines = basic_block(found)
        if found.get("ParameterizedJob"):
            lines += parameterized_lines(found)
        lines += summary_lines(found, summary)
        suffix = "/dispatch-" if found.get("ParameterizedJob") else "/periodic-"
        lines += children_lines(found, http.get("/v1/jobs", {"prefix": job_id + suffix}))
        return "\n".join(lines)
    allocs = http.get(_path(job_id, "allocations"))
    deployment = http.get(_path(job_id, "deployment"))
    evals = http.get(_path(job_id, "evaluations"))
    return render_job(found, summary, allocs, deployment, verbose, evals, show_evals)
