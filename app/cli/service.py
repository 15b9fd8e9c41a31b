"""`corral service list|info|delete`: Nomad's service catalog, in the layout of Nomad's
command/service_*.go."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

import click

from app.cli.support import http
from app.cli.support.output import columns, format_options, formatted, key_values
from app.wire.api.api_services import ServiceListJson

if TYPE_CHECKING:  # the CLI starts without the store (tests/unit/test_cli_imports.py)
    from app.store.services import RegistrationJson

SHORT_ID_LENGTH = 8
ALL = "*"

namespace_option = click.option(
    "-namespace", "--namespace", "namespace", default="default", show_default=True, help="Namespace to use."
)


@click.group()
def service() -> None:
    """Nomad's native service discovery: services registered by `service { provider = "nomad" }`."""


def render_list(namespace: str, found: list[ServiceListJson]) -> str:
    """Nomad's formatServiceListOutput: name (and namespace with '*') and the sorted tags."""
    if not found:
        return "No service registrations found"
    header = ["Service Name", *(["Namespace"] if namespace == ALL else []), "Tags"]
    rows = [header]
    for space in sorted(found, key=lambda entry: str(entry.get("Namespace", ""))):
        for stub in sorted(space.get("Services") or [], key=lambda s: str(s.get("ServiceName", ""))):
            tags = f"[{','.join(sorted(stub.get('Tags') or []))}]"
            rows.append([str(stub["ServiceName"]), *([str(space["Namespace"])] if namespace == ALL else []), tags])
    return "\n".join(columns(rows))


def address(reg: RegistrationJson) -> str:
    host, port = str(reg.get("Address", "")), int(reg.get("Port") or 0)
    if not port:
        return host
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def render_info(found: list[RegistrationJson], verbose: bool) -> str:
    """Nomad's service info: a table by job ID, or each registration's details with -verbose."""
    if not found:
        return "No service registrations found"
    ordered = sorted(found, key=lambda reg: str(reg.get("JobID", "")))
    if verbose:
        blocks = []
        for reg in ordered:
            pairs = [
                ("ID", reg["ID"]),
                ("Service Name", reg["ServiceName"]),
                ("Namespace", reg["Namespace"]),
                ("Job ID", reg["JobID"]),
                ("Alloc ID", reg["AllocID"]),
                ("Node ID", reg["NodeID"]),
                ("Datacenter", reg["Datacenter"]),
                ("Address", address(reg)),
                ("Tags", f"[{','.join(reg.get('Tags') or [])}]"),
            ]
            blocks.append("\n".join(key_values(pairs)))
        return "\n\n".join(blocks)
    rows = [["Job ID", "Address", "Tags", "Node ID", "Alloc ID"]]
    for reg in ordered:
        rows.append(
            [
                str(reg["JobID"]),
                address(reg),
                f"[{','.join(reg.get('Tags') or [])}]",
                str(reg["NodeID"])[:SHORT_ID_LENGTH],
                str(reg["AllocID"])[:SHORT_ID_LENGTH],
            ]
        )
    return "\n".join(columns(rows))


@service.command(name="list")
@namespace_option
@format_options
def list_command(namespace: str, as_json: bool, template: str | None) -> None:
    """List the registered services: name and tags ('*' lists every namespace)."""
    found = http.get("/v1/services", {"namespace": namespace})
    if not formatted(found, as_json, template):
        click.echo(render_list(namespace, found if isinstance(found, list) else []))


@service.command(name="info")
@namespace_option
@click.option("-verbose", "--verbose", "verbose", is_flag=True, help="Show every field of each registration.")
@click.option("-filter", "--filter", "filter_", default=None, help="Filter expression on the registrations.")
@format_options
@click.argument("name")
def info(namespace: str, verbose: bool, filter_: str | None, as_json: bool, template: str | None, name: str) -> None:
    """The instances of service NAME: job, address, tags, node and allocation."""
    params = {"namespace": namespace, **({"filter": filter_} if filter_ else {})}
    found = http.get(f"/v1/service/{quote(name, safe='')}", params)
    if not formatted(found, as_json, template):
        click.echo(render_info(found if isinstance(found, list) else [], verbose))


@service.command(name="delete")
@namespace_option
@click.argument("name")
@click.argument("service_id")
def delete(namespace: str, name: str, service_id: str) -> None:
    """Delete one registration of service NAME by its ID (a stale instance)."""
    http.request(
        "DELETE", f"/v1/service/{quote(name, safe='')}/{quote(service_id, safe='')}", params={"namespace": namespace}
    )
    click.echo("Successfully deleted service registration")
