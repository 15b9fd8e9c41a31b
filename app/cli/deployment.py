"""`corral deployment list|status|promote|fail|pause|resume`, through the REST API."""

from __future__ import annotations

from datetime import UTC, datetime

import click

from app.cli import http
from app.wire.api_deployments import DeploymentPromoteRequest, DeploymentUpdateResponseJson
from app.wire.deployment import DeploymentJson, DeploymentStateJson

FULL_ID_LENGTH = 36
SHORT_ID_LENGTH = 8
ZERO_TIME = "0001-01-01T00:00:00Z"
GROUP_COLUMNS = (
    "Task Group",
    "Auto Revert",
    "Promoted",
    "Desired",
    "Canaries",
    "Placed",
    "Healthy",
    "Unhealthy",
    "Progress Deadline",
)

verbose_option = click.option(
    "-verbose", "--verbose", "verbose", is_flag=True, help="Show full deployment IDs instead of the first 8 characters."
)


@click.group()
def deployment() -> None:
    """List, inspect, promote, pause, resume and fail deployments on a corral server (CORRAL_ADDR,
    else NOMAD_ADDR, default http://127.0.0.1:4646). A DEPLOYMENT is a full ID or a prefix of one
    that matches a single deployment in any namespace."""


def resolve(deployment_id: str) -> str:
    """A full deployment id, or the one deployment whose id starts with the given prefix."""
    from app.cli.output import resolve as resolve_id

    return resolve_id("deployment", "/v1/deployments", deployment_id, full_length=FULL_ID_LENGTH)


def short(value: str, verbose: bool) -> str:
    return value if verbose else value[:SHORT_ID_LENGTH]


def columns(rows: list[list[str]]) -> list[str]:
    """Left-aligned columns two spaces apart, without trailing blanks."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def render_list(deployments: list[DeploymentJson], verbose: bool = False) -> str:
    if not deployments:
        return "No deployments found"
    rows = [["ID", "Job ID", "Job Version", "Status", "Description"]]
    for d in deployments:
        rows.append(
            [
                short(str(d["ID"]), verbose),
                str(d["JobID"]),
                str(d["JobVersion"]),
                str(d["Status"]),
                str(d.get("StatusDescription") or ""),
            ]
        )
    return "\n".join(columns(rows))


def progress_deadline(d: DeploymentJson, group: DeploymentStateJson) -> str:
    """When the group must next make progress: N/A without a progress_deadline or once the
    deployment is no longer running, TBD until its first allocation is placed."""
    if not group.get("ProgressDeadline") or d.get("Status") != "running":
        return "N/A"
    deadline = group.get("RequireProgressBy") or ZERO_TIME
    if deadline == ZERO_TIME:
        return "TBD"
    moment = datetime.fromisoformat(deadline.replace("Z", "+00:00")).astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def render_status(d: DeploymentJson, verbose: bool = False) -> str:
    lines = [
        f"ID          = {short(str(d['ID']), verbose)}",
        f"Job ID      = {d['JobID']}",
        f"Job Version = {d['JobVersion']}",
        f"Status      = {d['Status']}",
        f"Description = {d.get('StatusDescription') or ''}",
    ]
    groups = d.get("TaskGroups") or {}
    if not groups:
        return "\n".join(lines)
    rows = [list(GROUP_COLUMNS)]
    for name in sorted(groups):
        g = groups[name]
        rows.append(
            [
                name,
                str(bool(g.get("AutoRevert"))).lower(),
                str(bool(g.get("Promoted"))).lower() if g.get("DesiredCanaries") else "N/A",
                str(g.get("DesiredTotal", 0)),
                str(g.get("DesiredCanaries", 0)),
                str(g.get("PlacedAllocs", 0)),
                str(g.get("HealthyAllocs", 0)),
                str(g.get("UnhealthyAllocs", 0)),
                progress_deadline(d, g),
            ]
        )
    return "\n".join([*lines, "", "Deployed", *columns(rows)])


def render_update(message: str, response: DeploymentUpdateResponseJson) -> str:
    lines = [message]
    if response.get("RevertedJobVersion") is not None:
        lines.append(f"Job reverted to version {response['RevertedJobVersion']} (the latest stable version)")
    if response.get("EvalID"):
        lines.append(f"Evaluation ID: {response['EvalID']}")
    return "\n".join(lines)


@deployment.command(name="list")
@click.option(
    "-namespace",
    "--namespace",
    "namespace",
    default=None,
    help="Namespace to list; '*' lists every namespace [default: CORRAL_NAMESPACE, NOMAD_NAMESPACE or default].",
)
@verbose_option
def list_command(namespace: str | None, verbose: bool) -> None:
    """List deployments, newest first: ID, job, job version, status and its description."""
    params = {"reverse": "true", **({"namespace": namespace} if namespace else {})}
    found = http.get("/v1/deployments", params)
    click.echo(render_list(found if isinstance(found, list) else [], verbose))


@deployment.command()
@verbose_option
@click.option(
    "-monitor", "--monitor", "monitor_", is_flag=True, help="Print the deployment each time it changes until it ends."
)
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the API object as JSON.")
@click.option("-t", "template", metavar="TEMPLATE", help="Format the API object with a Go template subset.")
@click.argument("deployment_id", metavar="DEPLOYMENT")
def status(deployment_id: str, verbose: bool, monitor_: bool, as_json: bool, template: str | None) -> None:
    """Show DEPLOYMENT: its job and version, status and description, and per task group whether
    it auto-reverts and is promoted, the desired count and canaries, the allocations placed,
    healthy and unhealthy, and the progress deadline. -monitor prints it at each change until it
    ends (or waits for promotion); exit 0 when it succeeded or waits for promotion, else 1."""
    from app.cli.output import formatted

    if monitor_ and (as_json or template):
        raise click.UsageError("The monitor flag cannot be used with the '-json' or '-t' flags")
    full = resolve(deployment_id)
    if monitor_:
        from app.cli.monitor import AWAITING_PROMOTION, monitor_deployment

        ended = monitor_deployment(full, verbose, click.echo)
        raise SystemExit(0 if ended in ("successful", AWAITING_PROMOTION) else 1)
    found = http.get(f"/v1/deployment/{full}")
    if not formatted(found, as_json, template):
        click.echo(render_status(found, verbose))


@deployment.command()
@click.option(
    "-group",
    "--group",
    "groups",
    multiple=True,
    metavar="GROUP",
    help="Promote only this task group's canaries; repeat for several. Without it every group with canaries "
    "is promoted.",
)
@click.argument("deployment_id", metavar="DEPLOYMENT")
def promote(deployment_id: str, groups: tuple[str, ...]) -> None:
    """Promote the canaries of DEPLOYMENT so the rollout replaces the remaining allocations.
    Refused (409) unless the deployment is running and every chosen group's canaries are
    healthy. Prints the deployment-watcher evaluation that continues the rollout."""
    full = resolve(deployment_id)
    body: DeploymentPromoteRequest = {"DeploymentID": full, "All": not groups}
    if groups:
        body["Groups"] = list(groups)
    response = http.post(f"/v1/deployment/promote/{full}", body)
    click.echo(render_update(f"Deployment {full} promoted", response))


@deployment.command()
@click.argument("deployment_id", metavar="DEPLOYMENT")
def fail(deployment_id: str) -> None:
    """Mark DEPLOYMENT failed so no more of its allocations are placed. If a group has
    auto_revert, the job's latest stable version is registered again and printed."""
    full = resolve(deployment_id)
    response = http.post(f"/v1/deployment/fail/{full}", {"DeploymentID": full})
    click.echo(render_update(f"Deployment {full} failed", response))


@deployment.command()
@click.argument("deployment_id", metavar="DEPLOYMENT")
def pause(deployment_id: str) -> None:
    """Pause DEPLOYMENT: no further allocations are placed for it until it is resumed."""
    full = resolve(deployment_id)
    response = http.post(f"/v1/deployment/pause/{full}", {"DeploymentID": full, "Pause": True})
    click.echo(render_update(f"Deployment {full} paused", response))


@deployment.command()
@click.argument("deployment_id", metavar="DEPLOYMENT")
def resume(deployment_id: str) -> None:
    """Resume a paused DEPLOYMENT; prints the deployment-watcher evaluation that carries on
    with the rollout."""
    full = resolve(deployment_id)
    response = http.post(f"/v1/deployment/pause/{full}", {"DeploymentID": full, "Pause": False})
    click.echo(render_update(f"Deployment {full} resumed", response))
