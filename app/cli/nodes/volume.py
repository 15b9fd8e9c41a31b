"""`corral volume create|register|status|delete|init`, `volume claim` (volume_claim) and
`corral plugin status`, Nomad's volume commands, through the REST API (/v1/volumes,
/v1/volume/host/...). corral has dynamic host volumes only: asked for a CSI volume, a command
says it runs no CSI plugins and names the host volume way instead; -type defaults to host
(Nomad's default is csi)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import quote

import click
from click.decorators import FC

from app.cli.nodes.volume_claim import claim
from app.cli.nodes.volume_spec import parse_spec
from app.cli.support import http
from app.cli.support.output import columns, format_options, formatted, key_values
from app.wire.api.api_host_volumes import HostVolumeJson, HostVolumeStubJson
from app.wire.json import JsonObject

NO_CSI = 'corral runs no CSI plugins: use a dynamic host volume (-type host, or type = "host" in the specification)'
SHORT = 8
MONITOR_WAIT = "5s"
HCL_NAME, JSON_NAME = "volume.hcl", "volume.json"
EXAMPLE_HCL = """\
# A dynamic host volume: `corral volume create volume.hcl` asks a client to make a directory with
# the built-in mkdir plugin; `corral volume register volume.hcl` records an existing directory
# (host_path) on a named node instead. Jobs in the namespace mount it by name:
#   volume "data" { type = "host" source = "scratch" }
type      = "host"
name      = "scratch"
namespace = "default"
plugin_id = "mkdir"

# Where it goes: a node by ID, or any ready node of the pool that meets the constraints.
# node_id = "..."
node_pool = "default"

constraint {
  attribute = "${attr.kernel.name}"
  value     = "linux"
}

# Recorded with the volume (the mkdir plugin does not limit a directory's size).
capacity_min = "1GiB"
capacity_max = "10GiB"

# Optional: how jobs may use it (single-node-writer on a file system when omitted).
capability {
  access_mode     = "single-node-writer"
  attachment_mode = "file-system"
}

# Passed to the plugin: mkdir takes the directory's mode, uid and gid.
parameters {
  mode = "0755"
}

# For `volume register` only: the existing directory on node_id.
# host_path = "/srv/volumes/scratch"
"""
EXAMPLE_JSON = {
    "type": "host",
    "name": "scratch",
    "namespace": "default",
    "plugin_id": "mkdir",
    "node_pool": "default",
    "constraint": [{"attribute": "${attr.kernel.name}", "value": "linux"}],
    "capacity_min": "1GiB",
    "capacity_max": "10GiB",
    "capability": [{"access_mode": "single-node-writer", "attachment_mode": "file-system"}],
    "parameters": {"mode": "0755"},
}


@click.group()
def volume() -> None:
    """Dynamic host volumes: directories on a node that jobs of a namespace mount by name."""


volume.add_command(claim)


@click.group()
def plugin() -> None:
    """Storage plugins (CSI): corral runs none."""


def _limit(value: str, verbose: bool) -> str:
    return value if verbose else value[:SHORT]


def render_volumes(volumes: list[HostVolumeStubJson], verbose: bool = False) -> str:
    rows = [["ID", "Name", "Namespace", "Plugin ID", "Node ID", "Node Pool", "State"]]
    for v in sorted(volumes, key=lambda v: v["ID"]):
        row = [_limit(v["ID"], verbose), v["Name"], v["Namespace"], v["PluginID"], _limit(v["NodeID"], verbose)]
        rows.append([*row, v["NodePool"], v["State"]])
    return "\n".join(columns(rows))


def render_volume(vol: HostVolumeJson, verbose: bool = False, short: bool = False) -> str:
    lines = key_values(
        [
            ("ID", vol["ID"]),
            ("Name", vol["Name"]),
            ("Namespace", vol["Namespace"]),
            ("Plugin ID", vol["PluginID"]),
            ("Node ID", vol["NodeID"]),
            ("Node Pool", vol["NodePool"]),
            ("Capacity", _bytes(vol["CapacityBytes"])),
            ("State", vol["State"]),
            ("Host Path", vol["HostPath"]),
        ]
    )
    if short:
        return "\n".join(lines)
    allocs = vol.get("Allocations") or []
    lines += ["", "Allocations"]
    if not allocs:
        lines.append("No allocations placed")
    else:
        rows = [["ID", "Node ID", "Task Group", "Desired", "Status"]]
        rows += [
            [
                _limit(a["ID"], verbose),
                _limit(a["NodeID"], verbose),
                a["TaskGroup"],
                a["DesiredStatus"],
                a["ClientStatus"],
            ]
            for a in allocs
        ]
        lines += columns(rows)
    return "\n".join(lines)


def _bytes(count: int) -> str:
    """go-humanize's IBytes: 0 B, 1.0 KiB, 10 GiB."""
    size, units = float(count), ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]
    if size < 10:
        return f"{int(size)} B"
    unit = 0
    while size >= 1024 and unit < len(units) - 1:
        size, unit = size / 1024, unit + 1
    return f"{size:.1f} {units[unit]}" if size < 10 else f"{size:.0f} {units[unit]}"


def find_volume(prefix: str) -> HostVolumeStubJson:
    """Nomad's getHostVolumeByPrefix: the one volume whose ID (or name) starts with PREFIX; an exact
    ID or name wins among several."""
    found: list[HostVolumeStubJson] = http.get("/v1/volumes", {"type": "host", "prefix": prefix})
    if not found:
        raise click.ClickException(f'Error listing volumes: no volumes with prefix or ID "{prefix}" found')
    exact = [v for v in found if prefix in (v["ID"], v["Name"])]
    if len(found) == 1 or len(exact) == 1:
        return found[0] if len(found) == 1 else exact[0]
    raise click.ClickException(f"Prefix matched multiple volumes\n\n{render_volumes(found)}")


def _type_option(help_text: str) -> Callable[[FC], FC]:
    """Nomad's -type; corral's default is host, the only kind it has (Nomad's is csi)."""
    return click.option("-type", "--type", "kind", default="host", type=click.Choice(["host", "csi"]), help=help_text)


@volume.command("status")
@click.option("-type", "--type", "kind", default="", help="host or csi; none: both kinds.")
@click.option("-node", "--node", "node_id", default="", help="Only the volumes of this node (host).")
@click.option("-node-pool", "--node-pool", "node_pool", default="", help="Only the volumes of this node pool (host).")
@click.option("-short", "--short", is_flag=True, help="Only the volume's own fields.")
@click.option("-verbose", "--verbose", is_flag=True, help="Full IDs.")
@format_options
@click.argument("volume_id", required=False, default="")
def status(
    kind: str,
    node_id: str,
    node_pool: str,
    short: bool,
    verbose: bool,
    as_json: bool,
    template: str | None,
    volume_id: str,
) -> None:
    """List the volumes, or show volume VOLUME_ID (an ID prefix or a name)."""
    if kind not in ("", "host", "csi"):
        raise click.ClickException(f'No such volume type "{kind}"')
    if volume_id and (node_id or node_pool):
        raise click.ClickException("-node or -node-pool options can only be used when no ID is provided")
    if kind == "csi":
        if node_id or node_pool:
            raise click.ClickException("-node and -node-pool can only be used with -type host")
        _csi_status(volume_id, as_json, template)
        return
    if volume_id:
        vol: HostVolumeJson = http.get(f"/v1/volume/host/{quote(find_volume(volume_id)['ID'])}")
        if not formatted(vol, as_json, template):
            click.echo(render_volume(vol, verbose, short))
        return
    params = {"type": "host", "node_id": node_id or None, "node_pool": node_pool or None}
    found: list[HostVolumeStubJson] = http.get("/v1/volumes", params)
    if formatted(found, as_json, template):
        return
    click.echo("Dynamic Host Volumes")
    click.echo(render_volumes(found, verbose) if found else "No dynamic host volumes")
    if not kind:
        click.echo("\nContainer Storage Interface\nNo CSI volumes")


def _csi_status(volume_id: str, as_json: bool, template: str | None) -> None:
    if volume_id:
        raise click.ClickException(f'Error querying volume: CSI volume "{volume_id}" not found: {NO_CSI}')
    found = http.get("/v1/volumes", {"type": "csi"})
    if not formatted(found, as_json, template):
        click.echo("Container Storage Interface\nNo CSI volumes")


def _spec(file: str) -> tuple[str, JsonObject]:
    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text()
    except OSError as err:
        raise click.ClickException(f"Error reading file: {err.strerror or err}") from None
    kind, vol = parse_spec(text)
    if kind == "csi":
        raise click.ClickException(f"Error: {NO_CSI}")
    if kind != "host":
        raise click.ClickException(f'Error: volume type "{kind}" is not supported')
    return kind, vol


def _namespace_of(vol: JsonObject) -> dict[str, str | None]:
    """The spec's namespace is the request's (Nomad's client.SetNamespace)."""
    ns = vol.get("Namespace")
    return {"namespace": ns} if isinstance(ns, str) and ns else {}


def _existing(vol: JsonObject, volume_id: str) -> None:
    """-id: update that volume (an ID prefix or a name)."""
    if volume_id:
        vol["ID"] = find_volume(volume_id)["ID"]


@volume.command("create")
@click.option("-detach", "--detach", is_flag=True, help="Return at once instead of waiting for the volume to be ready.")
@click.option("-verbose", "--verbose", is_flag=True, help="Full IDs.")
@click.option("-policy-override", "--policy-override", is_flag=True, help="Accepted for Nomad's scripts (no Sentinel).")
@click.option("-id", "--id", "volume_id", default="", help="Update this existing volume.")
@click.argument("file")
def create(file: str, detach: bool, verbose: bool, policy_override: bool, volume_id: str) -> None:
    """Create a dynamic host volume from the specification FILE ('-': standard input)."""
    _, vol = _spec(file)
    _existing(vol, volume_id)
    answer = http.put("/v1/volume/host/create", {"Volume": vol, "PolicyOverride": policy_override}, _namespace_of(vol))
    made: HostVolumeJson = answer["Volume"]
    _warnings(answer)
    if detach or made["State"] == "ready":
        click.echo(f"Created host volume {made['Name']} with ID {made['ID']}")
        return
    click.echo(f"==> Created host volume {made['Name']} with ID {made['ID']}")
    _monitor(made, verbose)


def _warnings(answer: JsonObject) -> None:
    if answer.get("Warnings"):
        click.echo(f"Volume Warnings:\n{answer['Warnings']}\n")


def _monitor(vol: HostVolumeJson, verbose: bool) -> None:
    """Nomad's monitor without a terminal: blocking reads until the volume is ready."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    click.echo(f'==> {stamp}: Monitoring volume "{_limit(vol["ID"], verbose)}"...')
    index = vol["ModifyIndex"]
    params = {"namespace": vol["Namespace"], "wait": MONITOR_WAIT}
    while True:
        current: HostVolumeJson = http.get(f"/v1/volume/host/{quote(vol['ID'])}", {**params, "index": str(index)})
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if current["State"] == "ready":
            click.echo(f'==> {stamp}: Volume "{_limit(current["Name"], verbose)}" ready')
            return
        if current["State"] == "unavailable":
            raise click.ClickException(f'==> {stamp}: Volume "{current["Name"]}" unavailable')
        index = max(index, current["ModifyIndex"])


@volume.command("register")
@click.option("-policy-override", "--policy-override", is_flag=True, help="Accepted for Nomad's scripts (no Sentinel).")
@click.option("-id", "--id", "volume_id", default="", help="Update this existing volume.")
@click.argument("file")
def register(file: str, policy_override: bool, volume_id: str) -> None:
    """Register an existing directory (host_path on node_id) as a dynamic host volume."""
    _, vol = _spec(file)
    if not vol.get("NodeID"):
        raise click.ClickException("Node ID is required for registering")
    _existing(vol, volume_id)
    body = {"Volume": vol, "PolicyOverride": policy_override}
    answer = http.put("/v1/volume/host/register", body, _namespace_of(vol))
    _warnings(answer)
    made: HostVolumeJson = answer["Volume"]
    click.echo(f"Registered host volume {made['Name']} with ID {made['ID']}")


@volume.command("delete")
@_type_option("The volume type: host (csi: corral has none).")
@click.option("-force", "--force", is_flag=True, help="Accepted for Nomad's scripts (host volumes).")
@click.option("-secret", "--secret", multiple=True, help="CSI only.")
@click.argument("volume_id")
def delete(kind: str, force: bool, secret: tuple[str, ...], volume_id: str) -> None:
    """Delete volume VOLUME_ID (-type host: a dynamic host volume; refused while allocations use it;
    its client removes a mkdir volume's directory)."""
    if kind == "csi":
        raise click.ClickException(f"Could not find existing CSI volume to delete: {NO_CSI}")
    found = find_volume(volume_id)
    http.request("DELETE", f"/v1/volume/host/{quote(found['ID'])}", params={"namespace": found["Namespace"]})
    click.echo(f'Successfully deleted volume "{found["ID"]}"!')


@volume.command("init")
@_type_option("The example's type: host (csi: corral has none).")
@click.option("-json", "--json", "as_json", is_flag=True, help="Write the example as JSON.")
@click.argument("file", required=False)
def init(kind: str, as_json: bool, file: str | None) -> None:
    """Write an example volume specification (-type host) to FILE (volume.hcl or volume.json)."""
    if kind == "csi":
        raise click.ClickException(f"{NO_CSI}; `volume init -type host` writes a host volume example")
    target = Path(file or (JSON_NAME if as_json else HCL_NAME))
    if target.exists():
        raise click.ClickException(f'Volume specification "{target}" already exists')
    content = json.dumps(EXAMPLE_JSON, indent=2) + "\n" if as_json else EXAMPLE_HCL
    try:
        target.write_text(content)
    except OSError as err:
        raise click.ClickException(f'Failed to write "{target}": {err.strerror or err}') from None
    click.echo(f"Example volume specification written to {target}")


@plugin.command("status")
@click.option("-type", "--type", "kind", default="csi", type=click.Choice(["csi"]), help="csi (the only kind).")
@click.option("-short", "--short", is_flag=True, help="Accepted for Nomad's scripts.")
@click.option("-verbose", "--verbose", is_flag=True, help="Accepted for Nomad's scripts.")
@format_options
@click.argument("plugin_id", required=False, default="")
def plugin_status(kind: str, short: bool, verbose: bool, as_json: bool, template: str | None, plugin_id: str) -> None:
    """List the CSI plugins (there are none: corral runs no CSI plugins)."""
    if plugin_id:
        http.get(f"/v1/plugin/csi/{quote(plugin_id, safe='')}")  # a 404 naming the reason
    found = http.get("/v1/plugins", {"type": "csi"})
    if not formatted(found, as_json, template):
        click.echo("Container Storage Interface\nNo CSI plugins")
