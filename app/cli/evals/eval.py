"""`corral eval status|list`: evaluations in Nomad's layout, through the REST API."""

from __future__ import annotations

import click

from app.cli.support import http
from app.cli.support.monitor import failed_group_lines
from app.cli.support.output import columns, date, format_options, formatted, key_values, resolve
from app.wire.evaluation import EvaluationJson


@click.group("eval")
def eval_() -> None:
    """Inspect evaluations (CORRAL_ADDR, else NOMAD_ADDR, default http://127.0.0.1:4646)."""


def _short(value: object, verbose: bool) -> str:
    return str(value or "") if verbose else str(value or "")[:8]


def render_evals(evals: list[EvaluationJson], verbose: bool) -> str:
    if not evals:
        return "No evals found"
    rows = [["ID", "Priority", "Triggered By", "Job ID", "Namespace", "Node ID", "Status", "Placement Failures"]]
    for e in evals:
        rows.append(
            [
                _short(e["ID"], verbose),
                str(e.get("Priority", "")),
                str(e.get("TriggeredBy", "")),
                str(e.get("JobID", "")),
                str(e.get("Namespace") or ""),
                _short(e.get("NodeID"), verbose) or "<none>",
                str(e.get("Status", "")),
                str(bool(e.get("FailedTGAllocs"))).lower(),
            ]
        )
    return "\n".join(columns(rows))


def render_eval(e: EvaluationJson, verbose: bool) -> str:
    lines = key_values(
        [
            ("ID", _short(e["ID"], verbose)),
            ("Create Time", date(e.get("CreateTime"))),
            ("Modify Time", date(e.get("ModifyTime"))),
            ("Status", e.get("Status", "")),
            ("Status Description", e.get("StatusDescription") or "<none>"),
            ("Type", e.get("Type", "")),
            ("TriggeredBy", e.get("TriggeredBy", "")),
            ("Job ID", e.get("JobID", "")),
            ("Namespace", e.get("Namespace") or ""),
            *([("Node ID", _short(e["NodeID"], verbose))] if e.get("NodeID") else []),
            *([("Deployment ID", _short(e["DeploymentID"], verbose))] if e.get("DeploymentID") else []),
            ("Priority", e.get("Priority", "")),
            ("Placement Failures", str(bool(e.get("FailedTGAllocs"))).lower()),
            *([("Previous Eval", _short(e["PreviousEval"], verbose))] if e.get("PreviousEval") else []),
            *([("Next Eval", _short(e["NextEval"], verbose))] if e.get("NextEval") else []),
            *([("Blocked Eval", _short(e["BlockedEval"], verbose))] if e.get("BlockedEval") else []),
        ]
    )
    failed = e.get("FailedTGAllocs") or {}
    if failed:
        lines += ["", "Failed Placements", *failed_group_lines(failed)]
        if e.get("BlockedEval"):
            lines.append(
                f'Evaluation "{_short(e["BlockedEval"], verbose)}" waiting for additional capacity to place remainder'
            )
    return "\n".join(lines)


@eval_.command("list")
@click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs.")
@click.option("-job", "--job", "job", help="Only this job's evaluations.")
@click.option("-status", "--status", "status", help="Only evaluations with this status.")
@click.option("-per-page", "--per-page", "per_page", type=click.IntRange(min=1), help="At most this many.")
@format_options
def list_(
    verbose: bool, job: str | None, status: str | None, per_page: int | None, as_json: bool, template: str | None
) -> None:
    """List evaluations, newest first: ID, priority, trigger, job, namespace, node, status and
    whether placement failed."""
    params: dict[str, http.QueryValue] = {"namespace": "*", "reverse": True}  # newest first, a page the newest
    params.update({k: v for k, v in (("job", job), ("status", status), ("per_page", per_page)) if v is not None})
    evals = http.get("/v1/evaluations", params)
    if not formatted(evals, as_json, template):
        click.echo(render_evals(evals, verbose))


@eval_.command()
@click.option("-verbose", "--verbose", is_flag=True, help="Show full IDs.")
@click.option(
    "-monitor", "--monitor", "monitor_", is_flag=True, help="Follow the evaluation to its end, as `job run` does."
)
@format_options
@click.argument("eval_id", metavar="EVAL")
def status(eval_id: str, verbose: bool, monitor_: bool, as_json: bool, template: str | None) -> None:
    """Show EVAL (a full ID or a unique prefix): its status, trigger, job, chained evaluations
    and, when placement failed, Nomad's "Failed Placements" block per task group. -monitor
    follows it instead (exit 2 when placement failed, 1 when its deployment did not succeed)."""
    if monitor_ and (as_json or template):
        raise click.UsageError("The monitor flag cannot be used with the '-json' or '-t' flags")
    full = resolve("evaluation", "/v1/evaluations", eval_id, render_evals)
    if monitor_:
        from app.cli.support.monitor import monitor

        raise SystemExit(monitor(full, verbose))
    found = http.get(f"/v1/evaluation/{full}")
    if not formatted(found, as_json, template):
        click.echo(render_eval(found, verbose))
