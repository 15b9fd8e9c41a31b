"""`corral node ...`: operator commands on client nodes, over the REST API."""

from __future__ import annotations

from typing import Any

import click

from app.cli.client import default_address
from app.cli.monitor import follow, monitor_options


@click.group()
def node() -> None:
    """Operate on client nodes (CORRAL_ADDR or NOMAD_ADDR names the server)."""


@node.command()
@click.option("-enable", "--enable", "enable", is_flag=True, help="Start draining the node.")
@click.option("-disable", "--disable", "disable", is_flag=True, help="Cancel the node's drain.")
@click.option(
    "-deadline",
    "--deadline",
    default="1h",
    show_default=True,
    help="How long allocations may take to migrate before they are stopped (e.g. 30m).",
)
@click.option("-no-deadline", "--no-deadline", is_flag=True, help="Migrate at max_parallel pace, with no deadline.")
@click.option("-force", "--force", is_flag=True, help="Stop every allocation now, ignoring max_parallel.")
@click.option("-ignore-system", "--ignore-system", is_flag=True, help="Leave system jobs' allocations running.")
@click.option("-keep-ineligible", "--keep-ineligible", is_flag=True, help="With -disable: keep the node ineligible.")
@click.option(
    "--address", default=None, help="Server address [default: CORRAL_ADDR, NOMAD_ADDR or http://127.0.0.1:4646]."
)
@monitor_options
@click.argument("node_id")
def drain(
    node_id: str,
    enable: bool,
    disable: bool,
    deadline: str,
    no_deadline: bool,
    force: bool,
    ignore_system: bool,
    keep_ineligible: bool,
    address: str | None,
    detach: bool,
    verbose: bool,
) -> None:
    """Drain NODE_ID: make it ineligible and migrate its allocations elsewhere, at most each
    group's migrate.max_parallel at a time, system jobs last; or cancel a drain. The
    evaluations the change creates are monitored unless -detach (the drain itself is not
    followed: `corral node status NODE` shows it)."""
    if enable == disable:
        raise click.UsageError("give exactly one of -enable or -disable")
    body: dict[str, Any] = {"NodeID": node_id, "MarkEligible": disable and not keep_ineligible}
    if enable:
        body["DrainSpec"] = {"Deadline": _deadline(deadline, no_deadline, force), "IgnoreSystemJobs": ignore_system}
    import httpx

    try:
        reply = httpx.post(
            f"{(address or default_address()).rstrip('/')}/v1/node/{node_id}/drain", json=body, timeout=30
        )
    except httpx.HTTPError as err:
        raise click.ClickException(f"cannot reach the server: {err}") from err
    if reply.status_code != 200:
        raise click.ClickException(reply.json().get("detail", reply.text) if reply.content else str(reply.status_code))
    click.echo(f"Node {node_id} drain {'enabled' if enable else 'disabled'}")
    codes = [0]
    for eval_id in reply.json().get("EvalIDs") or []:
        try:
            follow(str(eval_id), detach, verbose)
        except SystemExit as exit_:
            codes.append(int(exit_.code or 0))
    if max(codes):
        raise SystemExit(max(codes))


def _deadline(text: str, no_deadline: bool, force: bool) -> int:
    if force:
        return -1
    if no_deadline:
        return 0
    from app.jobspec.durations import DurationError, duration_ns

    try:
        return duration_ns(text)
    except DurationError as err:
        raise click.BadParameter(str(err), param_hint="-deadline") from err
