"""`corral job status [JOB]` and `corral job stop [-purge] JOB`, in Nomad's layout, through the
REST API."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import click

from app.cli import http
from app.cli.deployment import columns, render_list, render_status, short
from app.cli.monitor import alloc_metric_lines, follow, monitor_options
from app.cli.output import ago, format_options, formatted

SUMMARY_COLUMNS = ("Queued", "Starting", "Running", "Failed", "Complete", "Lost", "Unknown")


def _path(job_id: str, action: str = "") -> str:
    path = f"/v1/job/{quote(job_id, safe='')}"
    return f"{path}/{action}" if action else path


def render_jobs(jobs: list[dict[str, Any]]) -> str:
    if not jobs:
        return "No running jobs"
    rows = [["ID", "Type", "Priority", "Status", "Submit Date"]]
    for j in jobs:
        rows.append([str(j["ID"]), str(j["Type"]), str(j["Priority"]), _status(j), _date(j.get("SubmitTime", 0))])
    return "\n".join(columns(rows))


def _status(job: dict[str, Any]) -> str:
    """Nomad prints "dead (stopped)" for a job stopped by hand."""
    status = str(job["Status"])
    return f"{status} (stopped)" if job.get("Stop") and status == "dead" else status


def _date(nanos: int) -> str:
    return datetime.fromtimestamp(int(nanos) / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if nanos else ""


def render_job(
    job: dict[str, Any],
    summary: dict[str, Any],
    allocs: list[dict[str, Any]],
    deployment: dict[str, Any] | None,
    verbose: bool = False,
    evals: list[dict[str, Any]] | None = None,
) -> str:
    lines = [
        f"ID            = {job['ID']}",
        f"Name          = {job.get('Name') or job['ID']}",
        f"Submit Date   = {_date(job.get('SubmitTime', 0))}",
        f"Type          = {job['Type']}",
        f"Priority      = {job['Priority']}",
        f"Datacenters   = {','.join(job.get('Datacenters') or [])}",
        f"Namespace     = {job.get('Namespace', 'default')}",
        f"Node Pool     = {job.get('NodePool', 'default')}",
        f"Status        = {_status(job)}",
        f"Periodic      = {str(bool(job.get('Periodic'))).lower()}",
        f"Parameterized = {str(bool(job.get('ParameterizedJob'))).lower()}",
        "",
        "Summary",
    ]
    groups: dict[str, Any] = summary.get("Summary") or {}
    rows = [["Task Group", *SUMMARY_COLUMNS]]
    rows += [[name, *(str(groups[name].get(c, 0)) for c in SUMMARY_COLUMNS)] for name in sorted(groups)]
    lines += columns(rows)
    lines += placement_failure(evals or [])
    if deployment is not None:
        lines += ["", "Latest Deployment", *render_status(deployment, verbose).splitlines()]
    lines += ["", "Allocations"]
    if not allocs:
        lines.append("No allocations placed")
        return "\n".join(lines)
    rows = [["ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Created"]]
    for a in sorted(allocs, key=lambda a: -int(a.get("CreateIndex", 0))):
        rows.append(
            [
                short(str(a["ID"]), verbose),
                short(str(a.get("NodeID", "")), verbose),
                str(a["TaskGroup"]),
                str(a.get("JobVersion", 0)),
                str(a["DesiredStatus"]),
                str(a["ClientStatus"]),
                _date(a.get("CreateTime", 0)),
            ]
        )
    return "\n".join([*lines, *columns(rows)])


def render_allocs(allocs: list[dict[str, Any]], verbose: bool) -> str:
    """Allocation stubs, newest first, in Nomad's columns (formatAllocListStubs)."""
    if not allocs:
        return "No allocations placed"
    rows = [["ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Created", "Modified"]]
    for a in sorted(allocs, key=lambda a: -int(a.get("CreateIndex", 0))):
        rows.append(
            [
                short(str(a["ID"]), verbose),
                short(str(a.get("NodeID", "")), verbose),
                str(a["TaskGroup"]),
                str(a.get("JobVersion", 0)),
                str(a["DesiredStatus"]),
                str(a["ClientStatus"]),
                ago(a.get("CreateTime")),
                ago(a.get("ModifyTime")),
            ]
        )
    return "\n".join(columns(rows))


def placement_failure(evals: list[dict[str, Any]]) -> list[str]:
    """Nomad's "Placement Failure" section: the newest evaluation's FailedTGAllocs, shown while
    the job still has a blocked evaluation waiting for capacity (or when the newest evaluation
    itself failed to place)."""
    ordered = sorted(evals, key=lambda e: -int(e.get("CreateIndex", 0)))
    failed = next((e for e in ordered if e.get("FailedTGAllocs")), None)
    blocked = any(e.get("Status") == "blocked" for e in ordered)
    if failed is None or not (blocked or failed is ordered[0]):
        return []
    lines = ["", "Placement Failure"]
    for group in sorted(failed["FailedTGAllocs"]):
        lines.append(f'Task Group "{group}":')
        lines += alloc_metric_lines(failed["FailedTGAllocs"][group], "  ")
    return lines


def add_commands(job: click.Group) -> None:
    @job.command()
    @click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs instead of the first 8 characters.")
    @click.argument("job_id", metavar="[JOB]", required=False)
    def status(job_id: str | None, verbose: bool) -> None:
        """Without JOB, list the jobs (ID, type, priority, status, submit date). With JOB, show it:
        its status (derived from its allocations and evaluations, as Nomad does), the summary per
        task group, its latest deployment and its allocations, newest first."""
        if job_id is None:
            click.echo(render_jobs(http.get("/v1/jobs")))
            return
        found = http.get(_path(job_id))
        summary = http.get(_path(job_id, "summary"))
        allocs = http.get(_path(job_id, "allocations"))
        deployment = http.get(_path(job_id, "deployment"))
        evals = http.get(_path(job_id, "evaluations"))
        click.echo(render_job(found, summary, allocs, deployment, verbose, evals))

    @job.command()
    @click.option("-purge", "--purge", is_flag=True, help="Also remove the job from the API (GC removes its rows).")
    @monitor_options
    @click.argument("job_id", metavar="JOB")
    def stop(job_id: str, purge: bool, detach: bool, verbose: bool) -> None:
        """Stop JOB: a new version with Stop set and a job-deregister evaluation, after which the
        scheduler stops its allocations. Monitors the evaluation (-detach: prints it)."""
        response = http.request("DELETE", _path(job_id), params={"purge": "true"} if purge else None)
        if detach or not response.get("EvalID"):
            click.echo(f"Evaluation ID: {response.get('EvalID') or ''}".rstrip())
            return
        follow(response["EvalID"], detach, verbose)

    @job.command()
    @format_options
    @click.argument("job_id", metavar="JOB")
    def inspect(job_id: str, as_json: bool, template: str | None) -> None:
        """Print JOB as the API holds it: `{"Job": {...}}` in JSON (the default, as Nomad), or
        through -t."""
        found = http.get(_path(job_id))
        if template is not None:
            formatted(found, False, template)
            return
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
