"""`corral alloc ...`: operator commands on allocations, through the REST API."""

from __future__ import annotations

import click

from app.cli import http
from app.cli.monitor import follow, monitor_options

FULL_ID_LENGTH = 36


@click.group()
def alloc() -> None:
    """Operate on allocations (CORRAL_ADDR, else NOMAD_ADDR, default http://127.0.0.1:4646)."""


def resolve(alloc_id: str) -> str:
    """A full allocation id, or the one allocation whose id starts with the given prefix."""
    if len(alloc_id) == FULL_ID_LENGTH:
        return alloc_id
    found = http.get("/v1/allocations", {"prefix": alloc_id, "namespace": "*"})
    ids = sorted({a["ID"] for a in found}) if isinstance(found, list) else []
    if not ids:
        raise click.ClickException(f"no allocation with id prefix {alloc_id!r}")
    if len(ids) > 1:
        raise click.ClickException(f"prefix {alloc_id!r} matches {len(ids)} allocations: {', '.join(ids[:10])}")
    return str(ids[0])


@alloc.command()
@monitor_options
@click.argument("alloc_id")
def stop(alloc_id: str, detach: bool, verbose: bool) -> None:
    """Stop ALLOC_ID (a full id or a unique prefix) and have the scheduler place a replacement,
    as Nomad's `alloc stop`: the allocation is marked to migrate and an alloc-stop evaluation is
    created with it. Monitors the evaluation (-detach: prints it); an allocation already stopped
    or finished is an error."""
    full = resolve(alloc_id)
    response = http.post(f"/v1/allocation/{full}/stop", None)
    click.echo(f"Allocation {full} stop requested")
    follow(response.get("EvalID"), detach, verbose)
