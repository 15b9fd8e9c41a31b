"""`corral acl binding-rule create | list | info | update | delete`: Nomad's commands, flags and
output layout, through /v1/acl/binding-rule(s) (a management token reads and writes)."""

from __future__ import annotations

import json

import click

from app.cli.support import http
from app.cli.support.output import columns, format_options, formatted, key_values
from app.wire.json import JsonObject


@click.group("binding-rule")
def binding_rule() -> None:
    """ACL binding rules: which roles or policies a login through an auth method gets."""


def render_rule(found: JsonObject) -> str:
    """Nomad's formatACLBindingRule (the selector quoted, as Go's %q)."""
    return "\n".join(
        key_values(
            [
                ("ID", found.get("ID")),
                ("Description", found.get("Description") or ""),
                ("Auth Method", found.get("AuthMethod")),
                ("Selector", json.dumps(found.get("Selector") or "")),
                ("Bind Type", found.get("BindType")),
                ("Bind Name", found.get("BindName") or ""),
                ("Create Time", found.get("CreateTime")),
                ("Modify Time", found.get("ModifyTime")),
                ("Create Index", found.get("CreateIndex")),
                ("Modify Index", found.get("ModifyIndex")),
            ]
        )
    )


def render_rules(rules: list[JsonObject]) -> str:
    """Nomad's formatACLBindingRules."""
    if not rules:
        return "No ACL binding rules found"
    rows = [["ID", "Description", "Auth Method"]]
    rows += [[str(r.get("ID")), str(r.get("Description") or ""), str(r.get("AuthMethod"))] for r in rules]
    return "\n".join(columns(rows))


def _show(found: JsonObject, as_json: bool, template: str | None) -> None:
    if not formatted(found, as_json, template):
        click.echo(render_rule(found))


@binding_rule.command("create")
@click.option("-description", "--description", default="", help="Free text, at most 256 characters.")
@click.option("-auth-method", "--auth-method", "method", default="", help="The auth method the rule applies to.")
@click.option("-selector", "--selector", default="", help="go-bexpr over value.x / list.x; empty matches all.")
@click.option("-bind-type", "--bind-type", "bind_type", default="", help="role, policy or management.")
@click.option("-bind-name", "--bind-name", "bind_name", default="", help="Role or policy name (${value.x} allowed).")
@format_options
def rule_create(
    description: str, method: str, selector: str, bind_type: str, bind_name: str, as_json: bool, template: str | None
) -> None:
    """Create an ACL binding rule (management token needed)."""
    if not method:
        raise click.UsageError("ACL binding rule auth method must be specified using the -auth-method flag")
    if not bind_type:
        raise click.UsageError("ACL binding rule bind type must be specified using the -bind-type flag")
    body: JsonObject = {
        "Description": description,
        "AuthMethod": method,
        "Selector": selector,
        "BindType": bind_type,
        "BindName": bind_name,
    }
    _show(http.put("/v1/acl/binding-rule", body), as_json, template)


@binding_rule.command("list")
@format_options
def rule_list(as_json: bool, template: str | None) -> None:
    """List the ACL binding rules."""
    rules = http.get("/v1/acl/binding-rules")
    if not formatted(rules, as_json, template):
        click.echo(render_rules(rules))


@binding_rule.command("info")
@format_options
@click.argument("rule_id", metavar="ACL_BINDING_RULE_ID")
def rule_info(rule_id: str, as_json: bool, template: str | None) -> None:
    """Show an ACL binding rule."""
    _show(http.get(f"/v1/acl/binding-rule/{rule_id}"), as_json, template)


@binding_rule.command("update")
@click.option("-description", "--description", default="", help="New description.")
@click.option("-selector", "--selector", default="", help="New selector.")
@click.option("-bind-type", "--bind-type", "bind_type", default="", help="New bind type.")
@click.option("-bind-name", "--bind-name", "bind_name", default="", help="New bind name.")
@click.option("-no-merge", "--no-merge", "no_merge", is_flag=True, help="Replace every field instead of merging.")
@format_options
@click.argument("rule_id", metavar="ACL_BINDING_RULE_ID")
def rule_update(
    rule_id: str,
    description: str,
    selector: str,
    bind_type: str,
    bind_name: str,
    no_merge: bool,
    as_json: bool,
    template: str | None,
) -> None:
    """Update an ACL binding rule: merged with its current fields, or replaced with -no-merge."""
    current: JsonObject = http.get(f"/v1/acl/binding-rule/{rule_id}")
    if no_merge:
        if not bind_type:
            raise click.UsageError("ACL binding rule bind type must be specified using the -bind-type flag")
        body: JsonObject = {
            "ID": rule_id,
            "Description": description,
            "AuthMethod": current.get("AuthMethod"),
            "Selector": selector,
            "BindType": bind_type,
            "BindName": bind_name,
        }
    else:
        if not (description or selector or bind_type or bind_name):
            raise click.UsageError("Please provide at least one update for the ACL binding rule")
        body = dict(current)
        for key, value in (
            ("Description", description),
            ("Selector", selector),
            ("BindType", bind_type),
            ("BindName", bind_name),
        ):
            if value:
                body[key] = value
    _show(http.post(f"/v1/acl/binding-rule/{rule_id}", body), as_json, template)


@binding_rule.command("delete")
@click.argument("rule_id", metavar="ACL_BINDING_RULE_ID")
def rule_delete(rule_id: str) -> None:
    """Delete an ACL binding rule."""
    http.request("DELETE", f"/v1/acl/binding-rule/{rule_id}")
    click.echo(f"ACL binding rule {rule_id} successfully deleted")
