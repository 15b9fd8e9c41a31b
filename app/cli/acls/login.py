"""`corral login`: Nomad's login command with a JWT auth method. It finds the method (the
default one without -method), exchanges -login-token at /v1/acl/login and prints the minted
ACL token (its Secret ID is what later commands take as CORRAL_TOKEN/NOMAD_TOKEN)."""

from __future__ import annotations

import click

from app.cli.acl import print_token
from app.cli.support import http
from app.cli.support.output import formatted
from app.wire.acl import ACLToken
from app.wire.api.api_acl import ACLLoginRequest
from app.wire.json import JsonObject


def _method_type(methods: list[JsonObject], name: str) -> tuple[str, str]:
    """(name, type) of the method to use: the named one, else the default one."""
    if not name:
        defaults = [m for m in methods if m.get("Default") is True]
        if not defaults:
            raise click.ClickException("Must specify an auth method name, no default found")
        return str(defaults[-1].get("Name")), str(defaults[-1].get("Type"))
    for method in methods:
        if method.get("Name") == name:
            return name, str(method.get("Type"))
    raise click.ClickException(f"Error: method {name} not found in the state store. ")


@click.command()
@click.option("-method", "--method", "method", default="", help="The auth method to log in with (else the default).")
@click.option("-type", "--type", "method_type", default="", help="Deprecated in Nomad, and ignored.")
@click.option("-login-token", "--login-token", "login_token", default="", help="The JWT to log in with.")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the token as JSON.")
@click.option("-t", "template", metavar="TEMPLATE", help="Format the token with a Go template subset.")
def login(method: str, method_type: str, login_token: str, as_json: bool, template: str | None) -> None:
    """Log in through an ACL auth method and print the ACL token it mints."""
    if method_type:
        click.echo("warning: '-type' flag has been deprecated for nomad login command and will be ignored.", err=True)
    name, kind = _method_type(http.get("/v1/acl/auth-methods"), method)
    if kind == "OIDC":
        raise click.ClickException(
            "Error performing login: corral has no OIDC login flow (/v1/acl/oidc/*); use a JWT auth method"
        )
    if not login_token:
        raise click.ClickException("You need to provide a login token.")
    if kind != "JWT":
        raise click.ClickException(f'Unsupported authentication type "{kind}"')
    body: ACLLoginRequest = {"AuthMethodName": name, "LoginToken": login_token}
    token: ACLToken = http.put("/v1/acl/login", body)
    if formatted(token, as_json, template):
        return
    click.echo(f"Successfully logged in via {kind} and {name}\n")
    print_token(token)
