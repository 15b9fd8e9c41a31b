"""`corral node ...`: operator commands on client nodes, over the REST API."""

from __future__ import annotations

import click

from app.cli.client import default_address
from app.cli.support import http
from app.cli.support.monitor import follow, monitor_options
from app.cli.support.output import ago, columns, date, format_options, formatted, key_values, resolve
from app.values.constants import ALLOC_CLIENT_TERMINAL_STATUSES
from app.wire.allocation import AllocationJson, AllocationListStubJson
from app.wire.api.api_nodes import NodeDrainRequest
from app.wire.node import NodeJson, NodeListStubJson


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
@click.option("-self", "--self", "self_", is_flag=True, help="Drain the node whose node agent runs on this machine.")
@click.option("-yes", "--yes", is_flag=True, help="Skip the confirmation asked when NODE is a prefix.")
@click.option(
    "-monitor", "--monitor", "monitor", is_flag=True, help="Follow the node's drain until it ends, changing nothing."
)
@monitor_options
@click.argument("node_id", metavar="[NODE]", required=False)
def drain(
    node_id: str | None,
    self_: bool,
    yes: bool,
    monitor: bool,
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
    if monitor and (enable or disable):
        raise click.UsageError("The -monitor flag cannot be used with the '-enable' or '-disable' flags")
    if enable == disable and not monitor:
        raise click.UsageError("Either the '-enable' or '-disable' flag must be set, unless using '-monitor'")
    base = address or default_address()
    typed = _node_argument(node_id, self_)
    node_id = resolve("node", "/v1/nodes", typed, render_nodes, base=base)
    if monitor:
        raise SystemExit(monitor_drain(node_id, base))
    if typed != node_id and not yes and not _confirmed("enable" if enable else "disable", node_id):
        return
    body: NodeDrainRequest = {"NodeID": node_id, "MarkEligible": disable and not keep_ineligible}
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


def _node_argument(node_id: str | None, self_: bool) -> str:
    if self_ and node_id:
        raise click.UsageError("give NODE or -self, not both")
    if self_:
        return local_node_id()
    if not node_id:
        raise click.UsageError("give a NODE (a full ID or a unique prefix) or -self")
    return node_id


def local_node_id() -> str:
    """The node of the node agent on this machine (Nomad's -self asks its local agent): the ID the
    agent keeps in its data directory (the dev agent's <CORRAL_DATA_DIR>/client, else the
    standalone agent's default .corral-client)."""
    import json
    import os
    from pathlib import Path

    places = [Path(os.environ.get("CORRAL_DATA_DIR") or ".corral") / "client" / "client.json"]
    places.append(Path(".corral-client") / "client.json")
    for place in places:
        try:
            return str(json.loads(place.read_text())["node_id"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
    raise click.ClickException(
        f"Error determining local node: no node agent's identity in {' or '.join(map(str, places))}"
    )


def _confirmed(verb: str, node_id: str) -> bool:
    """Nomad's question when the node was named by a prefix: an exact `y` goes ahead."""
    answer = click.prompt(
        f'Are you sure you want to {verb} drain mode for node "{node_id}"? [y/N]',
        default="",
        show_default=False,
        prompt_suffix=" ",
    )
    if answer == "y":
        return True
    if not answer or answer.lower().startswith("n"):
        click.echo("Canceling drain toggle")
        return False
    click.echo("No confirmation detected. For confirmation, an exact 'y' is required.")
    raise SystemExit(1)


DRAIN_POLL_S = 1.0


def monitor_drain(node_id: str, base: str, poll_s: float = DRAIN_POLL_S) -> int:
    """Follow NODE's drain until it ends: each of its allocations as it is marked to migrate and
    as it stops, then Nomad's closing line. A node that is not draining ends the watch at once."""
    import time

    def now() -> str:
        return date(time.time_ns())

    click.echo(f'{now()}: Monitoring node "{node_id}": Ctrl-C to detach monitoring')
    seen: dict[str, str] = {}
    while True:
        found = http.request("GET", f"/v1/node/{node_id}", base=base)
        for a in http.request("GET", f"/v1/node/{node_id}/allocations", base=base) or []:
            state = _drain_state(a)
            if state and seen.get(a["ID"]) != state:
                seen[a["ID"]] = state
                click.echo(f'{now()}: Alloc "{a["ID"]}" {state}')
        if found.get("DrainStrategy") is None:
            click.echo(
                f'{now()}: Drain complete for node "{node_id}"'
                if seen
                else f'{now()}: No drain strategy set for node "{node_id}"'
            )
            return 0
        time.sleep(poll_s)


def _drain_state(alloc: AllocationJson) -> str | None:
    if alloc.get("ClientStatus") in ALLOC_CLIENT_TERMINAL_STATUSES or alloc.get("DesiredStatus") == "stop":
        return "draining" if alloc.get("ClientStatus") == "running" else "status " + str(alloc.get("ClientStatus"))
    if (alloc.get("DesiredTransition") or {}).get("Migrate"):
        return "marked for migration"
    return None


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


def _short(value: object, verbose: bool) -> str:
    return str(value or "") if verbose else str(value or "")[:8]


def render_nodes(nodes: list[NodeListStubJson], verbose: bool) -> str:
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


def render_node(n: NodeJson, allocs: list[AllocationListStubJson], verbose: bool) -> str:
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
            # corral's nodes advertise no HTTPAddr (the servers proxy): the link address stands in.
            ("Address", n.get("HTTPAddr") or n.get("LinkAddr") or "<none>"),
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
@click.option("-self", "--self", "self_", is_flag=True, help="Show the node whose node agent runs on this machine.")
@format_options
@click.argument("node_id", metavar="[NODE]", required=False)
def status(node_id: str | None, verbose: bool, self_: bool, as_json: bool, template: str | None) -> None:
    """Without NODE, list the client nodes (ID, pool, datacenter, name, class, drain,
    eligibility, status). With NODE (a full ID or a unique prefix) or -self, show it with its allocations."""
    if self_:
        node_id = _node_argument(node_id, self_)
    if node_id is None:
        nodes = http.get("/v1/nodes")
        if not formatted(nodes, as_json, template):
            click.echo(render_nodes(nodes, verbose))
        return
    full = resolve("node", "/v1/nodes", node_id, render_nodes)
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
    full = resolve("node", "/v1/nodes", node_id, render_nodes)
    value = "eligible" if enable else "ineligible"
    http.post(f"/v1/node/{full}/eligibility", {"NodeID": full, "Eligibility": value})
    click.echo(f'Node "{full}" scheduling eligibility set: {value} for scheduling')
