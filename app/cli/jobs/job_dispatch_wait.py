"""`corral job dispatch -wait`: after the child's evaluation, follow the dispatched child job
until it is dead (every allocation terminal), printing its task group summary when it changes,
as Nomad's dispatch -wait does. Exit 0 when no group has a failed allocation, 2 when one has,
1 after Nomad's five-minute limit."""

from __future__ import annotations

import time
from urllib.parse import quote

import click

from app.cli.support import http
from app.cli.support.deployment_view import short
from app.cli.support.monitor import stamp
from app.cli.support.output import columns
from app.wire.job import JobSummaryJson, TaskGroupSummaryJson

TIMEOUT_S = 300.0  # Nomad's limit on the wait
POLL_S = 1.0
COUNTS = ("Queued", "Complete", "Failed", "Running", "Starting", "Lost", "Unknown")
FAILED_EXIT = 2


def pause(seconds: float) -> None:
    """Every wait of the command (tests replace it)."""
    time.sleep(seconds)


def summary_table(summary: JobSummaryJson) -> list[str]:
    groups = summary.get("Summary") or {}
    rows = [["Task Group", *COUNTS]]
    rows += [[name, *(str(n) for n in _counts(groups[name]))] for name in sorted(groups)]
    return columns(rows)


def _counts(group: TaskGroupSummaryJson) -> tuple[int, ...]:
    """The counts in COUNTS' order."""
    g = group
    return (
        g.get("Queued", 0),
        g.get("Complete", 0),
        g.get("Failed", 0),
        g.get("Running", 0),
        g.get("Starting", 0),
        g.get("Lost", 0),
        g.get("Unknown", 0),
    )


def wait_for_child(child_id: str, verbose: bool) -> int:
    """Follow CHILD_ID until dead; its exit code."""
    path = f"/v1/job/{quote(child_id, safe='')}"
    click.echo(f'==> {stamp()}: Monitoring allocations for job "{short(child_id, verbose)}"')
    deadline, shown = time.monotonic() + TIMEOUT_S, None
    while True:
        status = http.get(path).get("Status")
        summary: JobSummaryJson = http.get(f"{path}/summary")
        table = summary_table(summary)
        if table != shown:
            click.echo(f"    {stamp()}: Deployed")
            click.echo("\n".join(f"    {line}" for line in table))
            shown = table
        if status == "dead":
            failed = any(int(g.get("Failed", 0)) for g in (summary.get("Summary") or {}).values())
            return FAILED_EXIT if failed else 0
        if time.monotonic() > deadline:
            click.echo("Timeout reached after 5m0s", err=True)
            return 1
        pause(POLL_S)
