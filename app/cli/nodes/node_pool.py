"""`corral node pool list | info | apply | delete | nodes | jobs`, Nomad's node pool commands,
through the REST API (/v1/node/pools, /v1/node/pool/:name[/nodes|/jobs])."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from urllib.parse import quote

import click

from app.cli.jobs.job_status import render_jobs
from app.cli.nodes.node import render_nodes
from app.cli.support import http
from app.cli.support.output import columns, format_options, formatted, key_values
from app.wire.json import JsonObject, JsonValue
from app.wire.node import NodePoolJson

_BOOKKEEPING = frozenset({"__is_block__", "__comments__", "__inline_comments__", "__start_line__", "__end_line__"})
# The node_pool block's settings and the API's keys they become.
_SETTINGS = {"description": "Description", "meta": "Meta", "scheduler_config": "SchedulerConfiguration"}
_SETTINGS["node_identity_ttl"] = "NodeIdentityTTL"


@click.group()
def pool() -> None:
    """Node pools: groups of nodes a job's node_pool confines it to ('all': every node)."""


def _path(name: str, action: str = "") -> str:
    path = f"/v1/node/pool/{quote(name, safe='')}"
    return f"{path}/{action}" if action else path


def render_pools(pools: list[NodePoolJson]) -> str:
    rows = [["Name", "Description"]]
    rows += [[str(p["Name"]), str(p.get("Description") or "")] for p in pools]
    return "\n".join(columns(rows))


def by_prefix(prefix: str) -> NodePoolJson:
    """Nomad's nodePoolByPrefix: the one pool the prefix names (an exact name wins)."""
    pools: list[NodePoolJson] = http.get("/v1/node/pools", {"prefix": prefix})
    exact = [p for p in pools if p["Name"] == prefix]
    if exact or len(pools) == 1:
        return exact[0] if exact else pools[0]
    if not pools:
        raise click.ClickException(f'Error retrieving node pool: No node pool with prefix "{prefix}" found')
    raise click.ClickException(f"Prefix matched multiple node pools\n\n{render_pools(pools)}")


@pool.command("list")
@format_options
def list_(as_json: bool, template: str | None) -> None:
    """List the node pools the token may use."""
    pools = http.get("/v1/node/pools")
    if not formatted(pools, as_json, template):
        click.echo(render_pools(pools))


@pool.command("info")
@format_options
@click.argument("name")
def info(name: str, as_json: bool, template: str | None) -> None:
    """Show node pool NAME (or the one pool a prefix names)."""
    found = by_prefix(name)
    if formatted(found, as_json, template):
        return
    lines = key_values([("Name", found["Name"]), ("Description", found.get("Description") or "")])
    meta = sorted((found.get("Meta") or {}).items())
    lines += ["", "Metadata", *(key_values(meta) if meta else ["No metadata"])]
    lines += ["", "Scheduler Configuration", "No scheduler configuration"]
    click.echo("\n".join(lines))


@pool.command("apply")
@click.option("-json", "--json", "json_input", is_flag=True, help="The file holds the pool as JSON.")
@click.argument("file")
def apply(file: str, json_input: bool) -> None:
    """Create or update a node pool from FILE ('-': standard input): HCL, `node_pool "name" {
    description = "..." meta { key = "value" } }`, or with -json the API's JSON object."""
    text = sys.stdin.read() if file == "-" else _read(file)
    body = _json_pool(text) if json_input else _hcl_pool(text)
    http.put(_path(str(body.get("Name", ""))) if body.get("Name") else "/v1/node/pools", body)
    click.echo(f'Successfully applied node pool "{body.get("Name", "")}"!')


@pool.command("delete")
@click.argument("name")
def delete(name: str) -> None:
    """Delete node pool NAME (refused for 'default' and 'all', and while nodes or live jobs use it)."""
    http.request("DELETE", _path(name))
    click.echo(f'Successfully deleted node pool "{name}"!')


@pool.command("nodes")
@click.option("-verbose", "--verbose", is_flag=True, help="Full node IDs.")
@format_options
@click.argument("name")
def nodes(name: str, verbose: bool, as_json: bool, template: str | None) -> None:
    """List the nodes of node pool NAME ('all': every node)."""
    found = http.get(_path(by_prefix(name)["Name"], "nodes"))
    if formatted(found, as_json, template):
        return
    click.echo(render_nodes(found, verbose) if found else "No nodes")


@pool.command("jobs")
@click.option("-namespace", "--namespace", default="*", show_default=True, help="Only the jobs of this namespace.")
@format_options
@click.argument("name")
def jobs(name: str, namespace: str, as_json: bool, template: str | None) -> None:
    """List the jobs that target node pool NAME."""
    found = http.get(_path(by_prefix(name)["Name"], "jobs"), {"namespace": namespace})
    if formatted(found, as_json, template):
        return
    click.echo(render_jobs(found) if found else "No jobs")


def _read(file: str) -> str:
    try:
        return Path(file).read_text()
    except OSError as err:
        raise click.ClickException(f'Failed to read file "{file}": {err.strerror or err}') from None


def _json_pool(text: str) -> JsonObject:
    try:
        body = json.loads(text)
    except json.JSONDecodeError as err:
        raise click.ClickException(f"Failed to parse input content: {err}") from None
    if not isinstance(body, dict):
        raise click.ClickException("Failed to parse input content: not a JSON object")
    found: JsonObject = body
    return found


def _hcl_pool(text: str) -> JsonObject:
    """The one node_pool block of an HCL file, as the API's JSON object."""
    try:
        import hcl2  # only here: the CLI's start-up imports no parser (tests/unit/test_cli_imports.py)

        options = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=True, with_comments=False)
        document = hcl2.loads(text, serialization_options=options)
    except Exception as err:  # python-hcl2 raises lark's exceptions and plain errors for bad input
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise click.ClickException(f"Failed to parse input content: {first}") from None
    blocks = [(label, body) for item in document.get("node_pool") or [] for label, body in item.items()]
    unknown = sorted(set(document) - {"node_pool"} - _BOOKKEEPING)
    if len(blocks) != 1 or unknown:
        raise click.ClickException('Failed to parse input content: expected one node_pool "name" { ... } block')
    label, settings = blocks[0]
    out: JsonObject = {"Name": label}
    for key, value in settings.items():
        if key in _BOOKKEEPING:
            continue
        if key not in _SETTINGS:
            raise click.ClickException(f'Failed to parse input content: node_pool "{label}": unknown setting {key}')
        out[_SETTINGS[key]] = _block_value(value)
    return out


def _block_value(value: JsonValue) -> JsonValue:
    """`meta { a = "b" }` arrives as a list of one block; `meta = { ... }` as an object."""
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        value = value[0]
    if isinstance(value, dict):
        return {k: v for k, v in value.items() if k not in _BOOKKEEPING}
    return value
