"""Following an evaluation to its end, as Nomad's CLI does after `job run`, `job stop`, `alloc
stop`, `node drain` and the other commands that create one: its status changes, the allocations
it placed, its placement failures, then the deployment those allocations belong to until it
ends. Exit code 2 when placement failed or the evaluation did not complete, 1 when a followed
deployment did not succeed (Nomad's). `monitor` only polls the REST API."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

import click

from app.cli.support import http
from app.cli.support.deployment_view import render_status
from app.wire.deployment import DeploymentJson, DeploymentStatus
from app.wire.evaluation import EvalStatus, EvaluationJson

POLL_S = 0.25
FAILED_EXIT = 2
PENDING: tuple[EvalStatus, ...] = ("pending",)
DEPLOYMENT_POLL_S = 1.0
DEPLOYMENT_ENDS: tuple[DeploymentStatus, ...] = ("successful", "failed", "cancelled", "blocked")
ROLLBACK_WAIT_S = 1.0
NEEDS_PROMOTION = "Deployment is running but requires manual promotion"
AWAITING_PROMOTION = "awaiting-promotion"  # what monitor_deployment returns for a deployment left to the operator


def short(ident: str, verbose: bool) -> str:
    return ident if verbose else ident[:8]


def stamp() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def alloc_metric_lines(metric: Mapping[str, Any], prefix: str) -> list[str]:
    """Why a task group could not be placed, one `* reason` line each, as Nomad words them."""
    lines = []
    if not metric.get("NodesEvaluated"):
        lines.append("* No nodes were eligible for evaluation")
    for dc, available in sorted((metric.get("NodesAvailable") or {}).items()):
        if not available:
            lines.append(f'* No nodes are available in datacenter "{dc}"')
    for klass, count in sorted((metric.get("ClassFiltered") or {}).items()):
        lines.append(f'* Class "{klass}": {count} nodes excluded by filter')
    for constraint, count in sorted((metric.get("ConstraintFiltered") or {}).items()):
        lines.append(f'* Constraint "{constraint}": {count} nodes excluded by filter')
    if metric.get("NodesExhausted"):
        lines.append(f"* Resources exhausted on {metric['NodesExhausted']} nodes")
    for klass, count in sorted((metric.get("ClassExhausted") or {}).items()):
        lines.append(f'* Class "{klass}" exhausted on {count} nodes')
    for dimension, count in sorted((metric.get("DimensionExhausted") or {}).items()):
        lines.append(f'* Dimension "{dimension}" exhausted on {count} nodes')
    for dimension in metric.get("QuotaExhausted") or []:
        lines.append(f'* Quota limit hit "{dimension}"')
    return [prefix + line for line in lines]


def failed_group_lines(failed: Mapping[str, Mapping[str, Any]], prefix: str = "") -> list[str]:
    """Nomad's per-group placement failure block (`Task Group "g" (failed to place N allocations):`)."""
    lines = []
    for group in sorted(failed):
        metric = failed[group]
        missing = 1 + int(metric.get("CoalescedFailures") or 0)
        noun = "allocation" if missing == 1 else "allocations"
        lines.append(f'{prefix}Task Group "{group}" (failed to place {missing} {noun}):')
        lines += alloc_metric_lines(metric, prefix + "  ")
    return lines


def trigger_line(evaluation: EvaluationJson) -> str:
    if evaluation.get("NodeID") and not evaluation.get("JobID"):
        return f'Evaluation triggered by node "{short(str(evaluation["NodeID"]), False)}"'
    return f'Evaluation triggered by job "{evaluation.get("JobID", "")}"'


def monitor(
    eval_id: str,
    verbose: bool = False,
    echo: Callable[[str], None] = click.echo,
    poll_s: float = POLL_S,
) -> int:
    """Follow EVAL_ID (and the next evaluation it chains to) until it finishes; the exit code."""
    echo(f'==> {stamp()}: Monitoring evaluation "{short(eval_id, verbose)}"')
    seen_allocs: set[str] = set()
    status: str | None = None
    triggered = False
    deployment: str | None = None
    while True:
        evaluation: EvaluationJson = http.get(f"/v1/evaluation/{eval_id}")
        if not triggered:
            echo(f"    {stamp()}: {trigger_line(evaluation)}")
            triggered = True
        for alloc in http.get(f"/v1/evaluation/{eval_id}/allocations") or []:
            if alloc["ID"] in seen_allocs:
                continue
            seen_allocs.add(alloc["ID"])
            # Nomad learns the deployment from the evaluation; corral's evaluation does not carry
            # the one its plan created, the allocations it placed do.
            deployment = deployment or alloc.get("DeploymentID") or None
            echo(
                f'    {stamp()}: Allocation "{short(alloc["ID"], verbose)}" created: '
                f'node "{short(str(alloc.get("NodeID", "")), verbose)}", group "{alloc.get("TaskGroup", "")}"'
            )
        new_status = evaluation.get("Status", "")
        if status is not None and new_status != status:
            echo(f'    {stamp()}: Evaluation status changed: "{status}" -> "{new_status}"')
        status = new_status
        if new_status in PENDING:
            time.sleep(poll_s)
            continue
        deployment = deployment or evaluation.get("DeploymentID") or None
        if evaluation.get("DeploymentID"):
            echo(f'    {stamp()}: Evaluation within deployment: "{short(evaluation["DeploymentID"], verbose)}"')
        if evaluation.get("NextEval"):
            echo(f'==> {stamp()}: Monitoring next evaluation "{short(evaluation["NextEval"], verbose)}" in 0s')
            eval_id, status, triggered = str(evaluation["NextEval"]), None, False
            continue
        code = finish(evaluation, verbose, echo)
        if deployment is None:
            return code
        # Nomad's exit code after following a deployment: 0 once it succeeded (even if some
        # placement failed before), 1 for any other end. A deployment that waits for the operator
        # to promote its canaries ends the watch too, with 0: nothing failed, the next step is theirs.
        ended = monitor_deployment(str(deployment), verbose, echo, poll_s)
        return 0 if ended in ("successful", AWAITING_PROMOTION) else 1


def monitor_deployment(
    deployment_id: str, verbose: bool, echo: Callable[[str], None], poll_s: float = DEPLOYMENT_POLL_S
) -> str:
    """Print the deployment's status block each time it changes until it ends, as Nomad's monitor
    does when stdout is not a terminal; after an auto-reverted failure, follow the rollback's
    deployment too. Returns the followed deployment's final status."""
    echo(f'==> {stamp()}: Monitoring deployment "{short(deployment_id, verbose)}"')
    shown = ""
    while True:
        found: DeploymentJson = http.get(f"/v1/deployment/{deployment_id}")
        text = render_status(found, verbose)
        if text != shown:
            echo(f"\n{stamp()}\n{text}")
            shown = text
        status = found.get("Status", "")
        if awaits_promotion(found):
            ident = short(deployment_id, verbose)
            echo(f'==> {stamp()}: Deployment "{ident}" waits for promotion: corral deployment promote {ident}')
            return AWAITING_PROMOTION
        if status not in DEPLOYMENT_ENDS:
            time.sleep(poll_s)
            continue
        if status == "failed" and any(g.get("AutoRevert") for g in (found.get("TaskGroups") or {}).values()):
            time.sleep(ROLLBACK_WAIT_S)  # the rollback's deployment starts with the reverted version
            latest = http.get(f"/v1/job/{found['JobID']}/deployment", {"namespace": found.get("Namespace", "default")})
            if latest and latest.get("ID") != deployment_id:
                echo("")
                monitor_deployment(str(latest["ID"]), verbose, echo, poll_s)
        return status


def awaits_promotion(deployment: DeploymentJson) -> bool:
    """Running, needing a manual promotion, and every unpromoted group's canaries placed and
    healthy: the deployment will not move until an operator promotes (or fails) it."""
    if deployment.get("Status") != "running" or deployment.get("StatusDescription") != NEEDS_PROMOTION:
        return False
    groups = (deployment.get("TaskGroups") or {}).values()
    waiting = [g for g in groups if int(g.get("DesiredCanaries") or 0) > 0 and not g.get("Promoted")]
    return bool(waiting) and all(
        len(g.get("PlacedCanaries") or []) >= int(g["DesiredCanaries"])
        and int(g.get("HealthyAllocs") or 0) >= int(g["DesiredCanaries"])
        for g in waiting
    )


def finish(evaluation: EvaluationJson, verbose: bool, echo: Callable[[str], None]) -> int:
    """The closing lines and the exit code: 2 unless complete with everything placed."""
    ident, status = short(str(evaluation["ID"]), verbose), evaluation.get("Status", "")
    failed = evaluation.get("FailedTGAllocs") or {}
    if not failed:
        echo(f'==> {stamp()}: Evaluation "{ident}" finished with status "{status}"')
        return 0 if status == "complete" else FAILED_EXIT
    echo(f'==> {stamp()}: Evaluation "{ident}" finished with status "{status}" but failed to place all allocations:')
    for line in failed_group_lines(failed):
        echo(f"    {stamp()}: {line}" if line.startswith("Task Group") else f"    {line}")
    if evaluation.get("BlockedEval"):
        blocked = short(str(evaluation["BlockedEval"]), verbose)
        echo(f'    {stamp()}: Evaluation "{blocked}" waiting for additional capacity to place remainder')
    return FAILED_EXIT


def follow(eval_id: str | None, detach: bool, verbose: bool) -> None:
    """After a command created EVAL_ID: print it (-detach) or monitor it and exit with its code."""
    if not eval_id:
        return
    if detach:
        click.echo(f"Evaluation ID: {eval_id}")
        return
    code = monitor(eval_id, verbose)
    if code:
        raise SystemExit(code)


def monitor_options(command: Any) -> Any:
    """-detach and -verbose, as Nomad's commands that create an evaluation take them."""
    command = click.option(
        "-verbose", "--verbose", is_flag=True, help="Show full IDs instead of their first 8 characters."
    )(command)
    return click.option(
        "-detach",
        "--detach",
        is_flag=True,
        help="Print the evaluation ID and return instead of monitoring it (the monitor exits 2 "
        "if placement failed or the evaluation did not complete).",
    )(command)
