"""`corral namespace apply | list | status | delete`, through the REST API."""

from __future__ import annotations

import json

import click

from app.cli.support import http
from app.cli.support.output import formatted
from app.wire.api.api_namespaces import NamespaceRequest


@click.group()
def namespace() -> None:
    """Namespaces: jobs live in one; ACL policies grant capabilities per namespace."""


@namespace.command("apply")
@click.option("-description", "--description", default=None, help="Description of the namespace.")
@click.option("-meta", "--meta", "meta", multiple=True, help="key=value metadata (repeatable).")
@click.argument("name")
def apply(name: str, description: str | None, meta: tuple[str, ...]) -> None:
    """Create or update namespace NAME."""
    values: dict[str, str] = {}
    for item in meta:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"must be key=value, got {item!r}", param_hint="-meta")
        values[key] = value
    body: NamespaceRequest = {"Name": name, "Description": description or "", "Meta": values}
    try:
        current = http.get(f"/v1/namespace/{name}")
    except http.ApiError as err:
        if err.status != 404:
            raise
        current = None
    if current is not None:
        body["Description"] = current.get("Description", "") if description is None else description
        body["Meta"] = values or current.get("Meta") or {}
    http.put(f"/v1/namespace/{name}", body)
    click.echo(f'Successfully applied namespace "{name}"!')


@namespace.command("list")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the namespaces as JSON.")
def list_(as_json: bool) -> None:
    """List the namespaces the token may use."""
    found = http.get("/v1/namespaces")
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    width = max([len("Name"), *(len(n["Name"]) for n in found)])
    click.echo(f"{'Name'.ljust(width)}  Description")
    for item in found:
        click.echo(f"{item['Name'].ljust(width)}  {item.get('Description', '')}".rstrip())


@namespace.command("status")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the namespace as JSON.")
@click.argument("name")
def status(name: str, as_json: bool) -> None:
    """Show namespace NAME."""
    found = http.get(f"/v1/namespace/{name}")
    if as_json:
        click.echo(json.dumps(found, indent=2))
        return
    click.echo(f"Name        = {found['Name']}")
    click.echo(f"Description = {found.get('Description') or '<none>'}")
    for key, value in sorted((found.get("Meta") or {}).items()):
        click.echo(f"Meta {key} = {value}")


@namespace.command("inspect")
@click.option("-t", "template", metavar="TEMPLATE", help="Format the namespace with a Go template subset.")
@click.argument("name")
def inspect(name: str, template: str | None) -> None:
    """Print namespace NAME as the API holds it, in JSON (or through -t), as Nomad's namespace inspect."""
    found = http.get(f"/v1/namespace/{name}")
    if not formatted(found, False, template):
        click.echo(json.dumps(found, indent=4))


@namespace.command("delete")
@click.argument("name")
def delete(name: str) -> None:
    """Delete namespace NAME (refused while it still has jobs, and for 'default')."""
    http.request("DELETE", f"/v1/namespace/{name}")
    click.echo(f'Successfully deleted namespace "{name}"!')
