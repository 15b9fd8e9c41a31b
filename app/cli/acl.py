"""`corral acl bootstrap | policy ... | token ...`: Nomad's ACL commands, through the REST API
(CORRAL_ADDR or NOMAD_ADDR; the caller's token from CORRAL_TOKEN or NOMAD_TOKEN)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from app.cli.support import http
from app.cli.support.output import formatted
from app.wire.acl import ACLToken
from app.wire.api.api_acl import AclTokenRequest


@click.group()
def acl() -> None:
    """ACL bootstrap, policies and tokens (the server needs CORRAL_ACL_ENABLED=true)."""


def _field(value: object) -> str:
    if value is None or value == []:
        return "<none>"
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def _rows(rows: list[tuple[str, object]]) -> None:
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        click.echo(f"{name.ljust(width)} = {_field(value)}")


def print_token(token: ACLToken) -> None:
    _rows(
        [
            ("Accessor ID", token["AccessorID"]),
            ("Secret ID", token.get("SecretID") or "<hidden: shown only at creation>"),
            ("Name", token.get("Name") or "<none>"),
            ("Type", token["Type"]),
            ("Global", token.get("Global", False)),
            ("Create Time", token.get("CreateTime")),
            ("Expiry Time", token.get("ExpirationTime")),
            ("Create Index", token.get("CreateIndex")),
            ("Modify Index", token.get("ModifyIndex")),
            ("Policies", token.get("Policies") if token["Type"] == "client" else "n/a"),
            ("Roles", [r["Name"] for r in token.get("Roles") or []] if token["Type"] == "client" else "n/a"),
        ]
    )


def _table(headers: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    click.echo("  ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)).rstrip())
    for row in rows:
        click.echo("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def _json(value: object) -> None:
    click.echo(json.dumps(value, indent=2))


@acl.command()
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the token as JSON.")
def bootstrap(as_json: bool) -> None:
    """Create the first management token (once). Keep its Secret ID: it is shown only now."""
    token = http.post("/v1/acl/bootstrap", None)
    _json(token) if as_json else print_token(token)


@acl.group()
def policy() -> None:
    """ACL policies, in Nomad's policy language (HCL or JSON)."""


@policy.command("apply")
@click.option("-description", "--description", default="", help="Description of the policy.")
@click.argument("name")
@click.argument("path")
def policy_apply(name: str, path: str, description: str) -> None:
    """Create or update policy NAME from the rules in PATH ('-' reads standard input)."""
    rules = sys.stdin.read() if path == "-" else _read(path)
    http.put(f"/v1/acl/policy/{name}", {"Name": name, "Description": description, "Rules": rules})
    click.echo(f'Successfully wrote "{name}" ACL policy!')


def _read(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError as err:
        raise click.BadParameter(f"cannot read {path}: {err.strerror}", param_hint="PATH") from err


@policy.command("list")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the policies as JSON.")
def policy_list(as_json: bool) -> None:
    """List the policies the token may see."""
    policies = http.get("/v1/acl/policies")
    if as_json:
        _json(policies)
    elif not policies:
        click.echo("No policies found")
    else:
        _table(["Name", "Description"], [[p["Name"], p.get("Description", "")] for p in policies])


@policy.command("info")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the policy as JSON.")
@click.argument("name")
def policy_info(name: str, as_json: bool) -> None:
    """Show policy NAME and its rules."""
    found = http.get(f"/v1/acl/policy/{name}")
    if as_json:
        _json(found)
        return
    _rows(
        [
            ("Name", found["Name"]),
            ("Description", found.get("Description") or "<none>"),
            ("CreateIndex", found["CreateIndex"]),
            ("ModifyIndex", found["ModifyIndex"]),
        ]
    )
    click.echo("\nRules\n\n" + found["Rules"])


@policy.command("self")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the policies as JSON.")
@click.option("-t", "template", metavar="TEMPLATE", help="Format the policies with a Go template subset.")
def policy_self(as_json: bool, template: str | None) -> None:
    """Show the policies of the calling token (its roles' included), as Nomad's `acl policy self`."""
    me = http.get("/v1/acl/token/self")
    if me.get("Type") == "management":
        click.echo("This is a management token. No individual policies are assigned.")
        return
    policies = http.get("/v1/acl/policy/self")
    if not policies:
        click.echo("No policies found.")
    elif not formatted(policies, as_json, template):
        # corral attaches no policies to jobs, so the workload columns are never filled
        na = "<unavailable>"
        _table(["Name", "Job ID", "Group Name", "Task Name"], [[p["Name"], na, na, na] for p in policies])


@policy.command("delete")
@click.argument("name")
def policy_delete(name: str) -> None:
    """Delete policy NAME (tokens naming it lose what it granted)."""
    http.request("DELETE", f"/v1/acl/policy/{name}")
    click.echo(f'Successfully deleted "{name}" ACL policy!')


@acl.group()
def token() -> None:
    """ACL tokens."""


def _token_options(fn: Any) -> Any:
    fn = click.option("-name", "--name", default=None, help="Name of the token.")(fn)
    fn = click.option(
        "-type", "--type", "kind", type=click.Choice(["client", "management"]), default=None, help="Token type."
    )(fn)
    fn = click.option("-policy", "--policy", "policies", multiple=True, help="A policy (repeatable).")(fn)
    fn = click.option("-role-id", "--role-id", "role_ids", multiple=True, help="An ACL role, by ID (repeatable).")(fn)
    return click.option(
        "-role-name", "--role-name", "role_names", multiple=True, help="An ACL role, by name (repeatable)."
    )(fn)


def role_links(role_ids: tuple[str, ...], role_names: tuple[str, ...]) -> list[dict[str, str]]:
    """Nomad's token role links: by ID, or by name."""
    return [{"ID": r} for r in role_ids] + [{"Name": r} for r in role_names]


@token.command("create")
@_token_options
@click.option("-global", "--global", "global_", is_flag=True, help="Mark the token global.")
@click.option("-ttl", "--ttl", default=None, help="Expire the token after this long (e.g. 8h).")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the token as JSON.")
def token_create(
    name: str | None,
    kind: str | None,
    policies: tuple[str, ...],
    role_ids: tuple[str, ...],
    role_names: tuple[str, ...],
    global_: bool,
    ttl: str | None,
    as_json: bool,
) -> None:
    """Create a token; its Secret ID is shown only now."""
    body: AclTokenRequest = {
        "Name": name or "",
        "Type": kind or "client",
        "Policies": list(policies),
        "Global": global_,
    }
    body["Roles"] = role_links(role_ids, role_names)
    if ttl:
        body["ExpirationTTL"] = ttl
    created = http.put("/v1/acl/token", body)
    _json(created) if as_json else print_token(created)


@token.command("list")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the tokens as JSON.")
def token_list(as_json: bool) -> None:
    """List tokens (management token needed)."""
    tokens = http.get("/v1/acl/tokens")
    if as_json:
        _json(tokens)
        return
    rows = [
        [t.get("Name") or "", t["Type"], _field(t.get("Global")), t["AccessorID"], _field(t.get("ExpirationTime"))]
        for t in tokens
    ]
    _table(["Name", "Type", "Global", "Accessor ID", "Expiry Time"], rows)


@token.command("info")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the token as JSON.")
@click.argument("accessor")
def token_info(accessor: str, as_json: bool) -> None:
    """Show the token with ACCESSOR ID."""
    found = http.get(f"/v1/acl/token/{accessor}")
    _json(found) if as_json else print_token(found)


@token.command("self")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the token as JSON.")
def token_self(as_json: bool) -> None:
    """Show the token in CORRAL_TOKEN (or NOMAD_TOKEN)."""
    found = http.get("/v1/acl/token/self")
    _json(found) if as_json else print_token(found)


@token.command("update")
@_token_options
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the token as JSON.")
@click.argument("accessor")
def token_update(
    accessor: str,
    name: str | None,
    kind: str | None,
    policies: tuple[str, ...],
    role_ids: tuple[str, ...],
    role_names: tuple[str, ...],
    as_json: bool,
) -> None:
    """Change the name, type, policies or roles of the token with ACCESSOR ID."""
    current = http.get(f"/v1/acl/token/{accessor}")
    body = {
        "AccessorID": accessor,
        "Name": current.get("Name", "") if name is None else name,
        "Type": kind or current["Type"],
        "Policies": list(policies) if policies else current.get("Policies") or [],
        "Roles": role_links(role_ids, role_names) if role_ids or role_names else current.get("Roles") or [],
        "Global": current.get("Global", False),
    }
    if body["Type"] == "management":
        body["Policies"], body["Roles"] = [], []
    updated = http.post(f"/v1/acl/token/{accessor}", body)
    _json(updated) if as_json else print_token(updated)


@token.command("delete")
@click.argument("accessor")
def token_delete(accessor: str) -> None:
    """Delete the token with ACCESSOR ID."""
    http.request("DELETE", f"/v1/acl/token/{accessor}")
    click.echo(f"Token {accessor} successfully deleted")


from app.cli.acls.auth_method import auth_method  # noqa: E402  (each group lives in app/cli/acls)
from app.cli.acls.binding_rule import binding_rule  # noqa: E402
from app.cli.acls.role import role  # noqa: E402

acl.add_command(role)
acl.add_command(auth_method)
acl.add_command(binding_rule)
