"""`corral eval delete [-filter F] [-yes] [EVAL]`: Nomad's `eval delete`, through DELETE
/v1/evaluations, refused unless the eval broker is paused."""

from __future__ import annotations

import click

from app.cli.evals.eval import render_evals
from app.cli.support import http
from app.cli.support.output import resolve

PAUSE_HINT = (
    'To delete evaluations you must first pause the eval broker by running "corral operator scheduler '
    'set-config -pause-eval-broker=true"\nAfter the deletion is complete, unpause the eval broker by running '
    '"corral operator scheduler set-config -pause-eval-broker=false"'
)


def _confirmed(question: str) -> bool:
    answer = click.prompt(question, default="", show_default=False).strip()
    if answer == "y":
        return True
    if answer == "" or answer.lower().startswith("n"):
        click.echo("Cancelling eval deletion")
        return False
    click.echo("No confirmation detected. For confirmation, an exact 'y' is required.")
    raise SystemExit(1)


def add_command(group: click.Group) -> None:
    @group.command("delete")
    @click.option("-filter", "filter_", help="Delete the evaluations this filter expression matches.")
    @click.option("-yes", "yes", is_flag=True, help="Do not ask for confirmation (deleting by filter asks).")
    @click.argument("eval_id", metavar="[EVAL]", required=False)
    def delete(filter_: str | None, yes: bool, eval_id: str | None) -> None:
        """Delete one evaluation (an ID or unique prefix), or those -filter matches. The eval
        broker must be paused first (`operator scheduler set-config -pause-eval-broker=true`);
        an evaluation that placed allocations or that a worker holds is not deleted."""
        if bool(filter_) == bool(eval_id):
            raise click.ClickException("Error validating command args and flags: evaluation ID or filter flag required")
        config = http.get("/v1/operator/scheduler/configuration").get("SchedulerConfig") or {}
        if not config.get("PauseEvalBroker"):
            click.echo("Eval broker is not paused", err=True)
            click.echo(PAUSE_HINT)
            raise SystemExit(1)
        if eval_id:
            full = resolve("evaluation", "/v1/evaluations", eval_id, render_evals)
            body: dict[str, object] = {"EvalIDs": [full]}
        else:
            if not yes:
                found = http.get("/v1/evaluations", {"filter": filter_, "namespace": "*"}) or []
                if not _confirmed(f"Are you sure you want to delete {len(found)} evals? [y/N]"):
                    return
                click.echo("")
            body = {"Filter": filter_}
        try:
            answer = http.request("DELETE", "/v1/evaluations", body=body)
        except http.ApiError as err:
            raise click.ClickException(f"Error deleting evaluations: {err.message}") from None
        count = int(answer.get("Count", 0))
        if count:
            click.echo(f"Successfully deleted {count} evaluation{'s' if count > 1 else ''}")
        else:
            click.echo("No evaluations were deleted")
