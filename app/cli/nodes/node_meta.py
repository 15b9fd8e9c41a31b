"""`corral node meta read | apply`: Nomad's dynamic node metadata commands, through
/v1/client/metadata (the servers forward them to the node's client, which keeps the values and
registers again with them merged into the node's Meta)."""

from __future__ import annotations

import click

from app.cli.nodes.node import render_nodes
from app.cli.support import http
from app.cli.support.output import format_options, formatted, key_values, resolve
from app.wire.json import JsonObject, JsonValue


@click.group("meta")
def meta() -> None:
    """Dynamic node metadata: read it, or set and unset keys at run time."""


def _node(node_id: str) -> str:
    if not node_id:
        raise click.UsageError("-node-id is required: corral's servers are not clients")
    return resolve("node", "/v1/nodes", node_id, render_nodes)


def _pairs(values: JsonValue, unset_mark: bool = False) -> str:
    items = sorted(values.items()) if isinstance(values, dict) else []
    if not items:
        return ""
    shown = [(k, "<unset>" if v is None and unset_mark else v) for k, v in items]
    return "\n".join(key_values(shown))


@meta.command("read")
@click.option("-node-id", "--node-id", "node_id", default="", help="The node (a unique ID prefix).")
@format_options
def meta_read(node_id: str, as_json: bool, template: str | None) -> None:
    """Print the node's metadata: all of it, the dynamic part, the static part."""
    found: JsonObject = http.get("/v1/client/metadata", {"node_id": _node(node_id)})
    if formatted(found, as_json, template):
        return
    click.echo("All Meta")
    click.echo(_pairs(found.get("Meta")))
    click.echo("\nDynamic Meta")
    click.echo(_pairs(found.get("Dynamic"), unset_mark=True))
    click.echo("\nStatic Meta")
    click.echo(_pairs(found.get("Static")))


@meta.command("apply")
@click.option("-node-id", "--node-id", "node_id", default="", help="The node (a unique ID prefix).")
@click.option("-unset", "--unset", "unset", default="", help="Comma-separated keys to remove.")
@click.argument("pairs", nargs=-1, metavar="KEY=VALUE...")
def meta_apply(node_id: str, unset: str, pairs: tuple[str, ...]) -> None:
    """Set (KEY=VALUE) and remove (-unset) keys of the node's dynamic metadata."""
    changes: JsonObject = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.UsageError(f"{pair!r} is not KEY=VALUE")
        changes[key] = value
    for key in filter(None, (k.strip() for k in unset.split(","))):
        changes[key] = None
    if not changes:
        raise click.UsageError("give at least one KEY=VALUE or -unset")
    http.post("/v1/client/metadata", {"NodeID": _node(node_id), "Meta": changes})
