"""`corral deployment list|status|promote|fail|pause|resume`, through the REST API."""

from __future__ import annotations

import click

from app.cli.support import http
from app.cli.support.deployment_view import render_list, render_status
from app.cli.support.monitor import AWAITING_PROMOTION, monitor_deployment
from app.cli.support.output import formatted
from app.cli.support.output import resolve as resolve_id
from app.wire.api.api_deployments import DeploymentPromoteRequest, DeploymentUpdateResponseJson

FULL_ID_LENGTH = 36

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
    return resolve_id("deployment", "/v1/deployments", deployment_id, render_list, full_length=FULL_ID_LENGTH)


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
    if monitor_ and (as_json or template):
        raise click.UsageError("The monitor flag cannot be used with the '-json' or '-t' flags")
    full = resolve(deployment_id)
    if monitor_:
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
