"""`corral acl role create | list | info | update | delete`: Nomad's ACL role commands, with
their flags and output, through /v1/acl/roles and /v1/acl/role (a management token writes)."""

from __future__ import annotations

import click

from app.cli.support import http
from app.cli.support.output import columns, format_options, formatted, key_values
from app.wire.json import JsonObject, JsonValue


@click.group()
def role() -> None:
    """ACL roles: named sets of policies that tokens link."""


def _policy_names(found: JsonObject) -> str:
    links = found.get("Policies") or []
    names = [str(link.get("Name")) for link in links if isinstance(link, dict)] if isinstance(links, list) else []
    return ",".join(sorted(names))


def render_role(found: JsonObject) -> str:
    """Nomad's formatACLRole."""
    return "\n".join(
        key_values(
            [
                ("ID", found.get("ID")),
                ("Name", found.get("Name")),
                ("Description", found.get("Description") or ""),
                ("Policies", _policy_names(found)),
                ("Create Index", found.get("CreateIndex")),
                ("Modify Index", found.get("ModifyIndex")),
            ]
        )
    )


def render_roles(roles: list[JsonObject]) -> str:
    """Nomad's formatACLRoles."""
    if not roles:
        return "No ACL roles found"
    rows = [["ID", "Name", "Description", "Policies"]]
    rows += [[str(r.get("ID")), str(r.get("Name")), str(r.get("Description") or ""), _policy_names(r)] for r in roles]
    return "\n".join(columns(rows))


def _links(policies: tuple[str, ...]) -> list[JsonValue]:
    return [{"Name": name} for name in dict.fromkeys(policies)]


def _show(found: JsonObject, as_json: bool, template: str | None) -> None:
    if not formatted(found, as_json, template):
        click.echo(render_role(found))


@role.command("create")
@click.option("-name", "--name", default="", help="Name of the role (1-128 letters, digits and '-').")
@click.option("-description", "--description", default="", help="Free text, at most 256 characters.")
@click.option("-policy", "--policy", "policies", multiple=True, help="A policy the role grants (repeatable).")
@format_options
def role_create(name: str, description: str, policies: tuple[str, ...], as_json: bool, template: str | None) -> None:
    """Create an ACL role (management token needed)."""
    if not name:
        raise click.UsageError("ACL role name must be specified using the -name flag")
    if not policies:
        raise click.UsageError("At least one policy name must be specified using the -policy flag")
    body: JsonObject = {"Name": name, "Description": description, "Policies": _links(policies)}
    _show(http.put("/v1/acl/role", body), as_json, template)


@role.command("list")
@format_options
def role_list(as_json: bool, template: str | None) -> None:
    """List the ACL roles the token may see (all of them with a management token)."""
    roles = http.get("/v1/acl/roles")
    if not formatted(roles, as_json, template):
        click.echo(render_roles(roles))


@role.command("info")
@click.option("-by-name", "--by-name", "by_name", is_flag=True, help="The argument is the role's name, not its ID.")
@format_options
@click.argument("role_id", metavar="ACL_ROLE_ID")
def role_info(role_id: str, by_name: bool, as_json: bool, template: str | None) -> None:
    """Show an ACL role."""
    path = f"/v1/acl/role/name/{role_id}" if by_name else f"/v1/acl/role/{role_id}"
    _show(http.get(path), as_json, template)


@role.command("update")
@click.option("-name", "--name", default="", help="New name of the role.")
@click.option("-description", "--description", default="", help="New description.")
@click.option("-policy", "--policy", "policies", multiple=True, help="A policy to add to the role (repeatable).")
@click.option("-no-merge", "--no-merge", "no_merge", is_flag=True, help="Replace every field instead of merging.")
@format_options
@click.argument("role_id", metavar="ACL_ROLE_ID")
def role_update(
    role_id: str,
    name: str,
    description: str,
    policies: tuple[str, ...],
    no_merge: bool,
    as_json: bool,
    template: str | None,
) -> None:
    """Update an ACL role: merged with its current fields, or replaced with -no-merge."""
    current: JsonObject = http.get(f"/v1/acl/role/{role_id}")
    if no_merge:
        if not name:
            raise click.UsageError("ACL role name must be specified using the -name flag")
        if not policies:
            raise click.UsageError("At least one policy name must be specified using the -policy flag")
        body: JsonObject = {"ID": role_id, "Name": name, "Description": description, "Policies": _links(policies)}
    else:
        if not (name or description or policies):
            raise click.UsageError("Please provide at least one flag to update the ACL role")
        existing = current.get("Policies")
        links: list[JsonValue] = list(existing) if isinstance(existing, list) else []
        known = {link.get("Name") for link in links if isinstance(link, dict)}
        links += [link for link in _links(policies) if isinstance(link, dict) and link["Name"] not in known]
        body = {
            "ID": role_id,
            "Name": name or current.get("Name"),
            "Description": description or current.get("Description"),
            "Policies": links,
        }
    _show(http.post(f"/v1/acl/role/{role_id}", body), as_json, template)


@role.command("delete")
@click.argument("role_id", metavar="ACL_ROLE_ID")
def role_delete(role_id: str) -> None:
    """Delete an ACL role; tokens linking it lose what it granted."""
    http.request("DELETE", f"/v1/acl/role/{role_id}")
    click.echo(f"ACL role {role_id} successfully deleted")
