"""`corral node ...`: operator commands on client nodes, over the REST API."""

from __future__ import annotations

from typing import Any

import click

from app.cli import http
from app.cli.client import default_address
from app.cli.deployment import columns
from app.cli.monitor import follow, monitor_options
from app.cli.output import ago, format_options, formatted, key_values, resolve


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
    """Drain NODE_ID (a full ID or a unique prefix): make it ineligible and migrate its
    allocations elsewhere, at most each group's migrate.max_parallel at a time, system jobs last; or cancel a drain. The
    evaluations the change creates are monitored unless -detach (the drain itself is not
    followed: `corral node status NODE` shows it)."""
    if enable == disable:
        raise click.UsageError("give exactly one of -enable or -disable")
    base = address or default_address()
    node_id = resolve("node", "/v1/nodes", node_id, base=base)
    body: dict[str, Any] = {"NodeID": node_id, "MarkEligible": disable and not keep_ineligible}
    if enable:
        body["DrainSpec"] = {"Deadline": _deadline(deadline, no_deadline, force), "IgnoreSystemJobs": ignore_system}
    reply = http.request("POST", f"/v1/node/{node_id}/drain", body=body, base=base)
    click.echo(f"Node {node_id} drain {'enabled' if enable else 'disabled'}")
    codes = [0]
    for eval_id in reply.get("EvalIDs") or []:
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


def _short(value: Any, verbose: bool) -> str:
    return str(value or "") if verbose else str(value or "")[:8]


def render_nodes(nodes: list[dict[str, Any]], verbose: bool) -> str:
    if not nodes:
        return "No nodes registered"
    rows = [["ID", "Node Pool", "DC", "Name", "Class", "Drain", "Eligibility", "Status"]]
    for n in sorted(nodes, key=lambda n: str(n.get("Name", ""))):
        rows.append(
            [
                _short(n["ID"], verbose),
                str(n.get("NodePool") or "default"),
                str(n.get("Datacenter", "")),
                str(n.get("Name", "")),
                str(n.get("NodeClass") or "<none>"),
                str(bool(n.get("Drain"))).lower(),
                str(n.get("SchedulingEligibility", "")),
                str(n.get("Status", "")),
            ]
        )
    return "\n".join(columns(rows))


def render_node(n: dict[str, Any], allocs: list[dict[str, Any]], verbose: bool) -> str:
    lines = key_values(
        [
            ("ID", n["ID"]),
            ("Name", n.get("Name", "")),
            ("Node Pool", n.get("NodePool") or "default"),
            ("Class", n.get("NodeClass") or "<none>"),
            ("DC", n.get("Datacenter", "")),
            # The full node has no Drain flag in Nomad: a drain strategy means draining.
            ("Drain", str(n.get("DrainStrategy") is not None).lower()),
            ("Eligibility", n.get("SchedulingEligibility", "")),
            ("Status", n.get("Status", "")),
            ("Address", n.get("HTTPAddr") or "<none>"),
            ("Drivers", ",".join(sorted(n.get("Drivers") or {})) or "<none>"),
        ]
    )
    resources = n.get("NodeResources") or {}
    cpu = (resources.get("Cpu") or {}).get("CpuShares")
    memory = (resources.get("Memory") or {}).get("MemoryMB")
    if cpu or memory:
        lines += ["", "Node Resources", f"CPU = {cpu or 0} MHz", f"Memory = {memory or 0} MiB"]
    lines += ["", "Allocations"]
    if not allocs:
        lines.append("No allocations placed")
    else:
        rows = [["ID", "Node ID", "Task Group", "Version", "Desired", "Status", "Created", "Modified"]]
        for a in sorted(allocs, key=lambda a: -int(a.get("CreateIndex", 0))):
            rows.append(
                [
                    _short(a["ID"], verbose),
                    _short(a.get("NodeID"), verbose),
                    str(a.get("TaskGroup", "")),
                    str(a.get("JobVersion", 0)),
                    str(a.get("DesiredStatus", "")),
                    str(a.get("ClientStatus", "")),
                    ago(a.get("CreateTime")),
                    ago(a.get("ModifyTime")),
                ]
            )
        lines += columns(rows)
    if verbose:
        attributes = n.get("Attributes") or {}
        lines += ["", "Attributes", *key_values(sorted(attributes.items()))] if attributes else []
        meta = n.get("Meta") or {}
        lines += ["", "Meta", *key_values(sorted(meta.items()))] if meta else []
    return "\n".join(lines)


@node.command()
@click.option("-verbose", "--verbose", is_flag=True, help="Full IDs, and the node's attributes and meta.")
@format_options
@click.argument("node_id", metavar="[NODE]", required=False)
def status(node_id: str | None, verbose: bool, as_json: bool, template: str | None) -> None:
    """Without NODE, list the client nodes (ID, pool, datacenter, name, class, drain,
    eligibility, status). With NODE (a full ID or a unique prefix), show it with its allocations."""
    if node_id is None:
        nodes = http.get("/v1/nodes")
        if not formatted(nodes, as_json, template):
            click.echo(render_nodes(nodes, verbose))
        return
    full = resolve("node", "/v1/nodes", node_id)
    found = http.get(f"/v1/node/{full}")
    if formatted(found, as_json, template):
        return
    click.echo(render_node(found, http.get(f"/v1/node/{full}/allocations"), verbose))


@node.command()
@click.option("-enable", "--enable", "enable", is_flag=True, help="Make the node eligible for placements.")
@click.option("-disable", "--disable", "disable", is_flag=True, help="Make the node ineligible for placements.")
@click.argument("node_id", metavar="NODE")
def eligibility(node_id: str, enable: bool, disable: bool) -> None:
    """Set whether the scheduler may place new allocations on NODE (a full ID or a unique prefix);
    its running allocations stay. Becoming eligible creates node-update evaluations."""
    if enable == disable:
        raise click.UsageError("give exactly one of -enable or -disable")
    full = resolve("node", "/v1/nodes", node_id)
    value = "eligible" if enable else "ineligible"
    http.post(f"/v1/node/{full}/eligibility", {"NodeID": full, "Eligibility": value})
    click.echo(f'Node "{full}" scheduling eligibility set: {value} for scheduling')
