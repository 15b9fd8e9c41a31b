"""`corral system`: cluster-wide maintenance through the REST API."""

from __future__ import annotations

import json

import click

from app.cli.support import http
from app.cli.support.settings import get_settings
from app.wire.api.api_system import GcRunJson


@click.group()
def system() -> None:
    """Cluster-wide maintenance (talks to the API at CORRAL_ADDR or NOMAD_ADDR)."""


@system.command("gc")
@click.option("--json", "as_json", is_flag=True, help="Print the run record as JSON.")
def force_gc(as_json: bool) -> None:
    """Collect everything terminal now, ignoring thresholds (nodes last), and wait for it.

    Prints what was removed. Fails (exit 1) if the collection failed or is still running
    after CORRAL_FORCE_GC_WAIT_S on the server; it then carries on, and `corral system gc-runs`
    shows how it ends."""

    wait_s = get_settings().force_gc_wait_s + 30
    try:
        run = http.request("PUT", "/v1/system/gc", timeout_s=wait_s)
    except http.ApiError as err:
        if err.status == 504 or isinstance(err.__cause__, TimeoutError):
            waited = "the server's CORRAL_FORCE_GC_WAIT_S" if err.status == 504 else f"{wait_s:.0f} s"
            raise click.ClickException(
                f"garbage collection did not finish within {waited}; it carries on in the background. "
                f"Run `corral system gc-runs` to see when it completes and what it removed. ({err.message})"
            ) from err
        raise
    if as_json:
        click.echo(json.dumps(run, indent=2))
        return
    click.echo(f"Garbage collection {run['EvalID']} complete in {run['DurationMs']} ms ({run['Batches']} batches)")
    _print_removed(run)


@system.group("reconcile")
def reconcile() -> None:
    """Reconcile cluster state (Nomad's `system reconcile`)."""


@reconcile.command("summaries")
def reconcile_summaries() -> None:
    """Reconcile the job summaries with the allocations (PUT /v1/system/reconcile/summaries).
    corral computes each summary from the allocations when it is read, so this always succeeds."""
    http.put("/v1/system/reconcile/summaries", None)
    click.echo("Successfully reconciled job summaries")


@system.command("gc-runs")
@click.option("--limit", default=20, show_default=True, type=click.IntRange(1, 1000), help="How many runs to show.")
def gc_runs(limit: int) -> None:
    """List recent garbage-collection runs, newest first, with what each removed."""
    runs = http.get("/v1/system/gc/runs", params={"limit": limit})
    click.echo(f"{'ID':>6}  {'Kind':<13} {'Status':<11} {'Started':<20} {'Ms':>7} {'Rows':>9}  Removed")
    for run in runs:
        removed = ", ".join(f"{k}={v}" for k, v in sorted(run["Removed"].items())) or "-"
        started = run["StartedAt"][:19].replace("T", " ")
        duration = run["DurationMs"] if run["DurationMs"] is not None else "-"
        click.echo(
            f"{run['ID']:>6}  {run['Kind']:<13} {run['Status']:<11} {started:<20} {duration:>7} "
            f"{run['RowsRemoved']:>9}  {removed}"
        )


def _print_removed(run: GcRunJson) -> None:
    if not run["Removed"]:
        click.echo("Nothing to collect.")
        return
    for kind, count in sorted(run["Removed"].items()):
        click.echo(f"  {kind:<18} {count:>9}")
