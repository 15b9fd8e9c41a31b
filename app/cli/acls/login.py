"""`corral login`: Nomad's login command. With a JWT auth method it exchanges -login-token at
/v1/acl/login; with an OIDC method it runs the browser flow: a callback server on
-oidc-callback-addr, the provider URL from /v1/acl/oidc/auth-url opened in a browser (or
printed), and the callback's code completed at /v1/acl/oidc/complete-auth. Either way it
prints the minted ACL token (its Secret ID is what later commands take as CORRAL_TOKEN/NOMAD_TOKEN)."""

from __future__ import annotations

import click

from app.cli.acl import print_token
from app.cli.support import http
from app.cli.support.output import formatted
from app.wire.acl import ACLToken
from app.wire.api.api_acl import ACLLoginRequest, ACLOIDCAuthURLRequest, ACLOIDCCompleteAuthRequest
from app.wire.json import JsonObject

DEFAULT_CALLBACK_ADDR = "localhost:4649"  # Nomad's -oidc-callback-addr default
VISIT_URL_MESSAGE = """Automatic opening of the OIDC provider for login has failed. To complete the
authentication, please visit your provider using the URL below:

{url}
"""


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


def _login_oidc(name: str, callback_addr: str) -> ACLToken:
    from app.cli.acls import oidc_callback  # http.server: only for OIDC logins

    server = oidc_callback.CallbackServer(callback_addr)
    try:
        asked: ACLOIDCAuthURLRequest = {
            "AuthMethodName": name,
            "RedirectURI": server.redirect_uri,
            "ClientNonce": server.nonce,
        }
        url = str(http.put("/v1/acl/oidc/auth-url", asked).get("AuthURL") or "")
        if not oidc_callback.open_browser(url):
            click.echo(VISIT_URL_MESSAGE.format(url=url), err=True)
        back = server.wait()
    finally:
        server.close()
    if back.error:
        raise click.ClickException(f"Error performing login: the provider refused it: {back.error}")
    done: ACLOIDCCompleteAuthRequest = {
        "AuthMethodName": name,
        "RedirectURI": server.redirect_uri,
        "ClientNonce": server.nonce,
        "Code": back.code,
        "State": back.state,
        "Iss": back.iss,
    }
    token: ACLToken = http.put("/v1/acl/oidc/complete-auth", done)
    return token


@click.command()
@click.option("-method", "--method", "method", default="", help="The auth method to log in with (else the default).")
@click.option("-type", "--type", "method_type", default="", help="Deprecated in Nomad, and ignored.")
@click.option(
    "-oidc-callback-addr",
    "--oidc-callback-addr",
    "callback_addr",
    default=DEFAULT_CALLBACK_ADDR,
    show_default=True,
    help="<IP>:<PORT> of the local server an OIDC provider sends the browser back to.",
)
@click.option("-login-token", "--login-token", "login_token", default="", help="The JWT to log in with (JWT methods).")
@click.option("-json", "--json", "as_json", is_flag=True, help="Print the token as JSON.")
@click.option("-t", "template", metavar="TEMPLATE", help="Format the token with a Go template subset.")
def login(
    method: str, method_type: str, callback_addr: str, login_token: str, as_json: bool, template: str | None
) -> None:
    """Log in through an ACL auth method and print the ACL token it mints."""
    if method_type:
        click.echo("warning: '-type' flag has been deprecated for nomad login command and will be ignored.", err=True)
    name, kind = _method_type(http.get("/v1/acl/auth-methods"), method)
    if kind != "OIDC" and not login_token:
        raise click.ClickException("You need to provide a login token.")
    if kind == "OIDC":
        token = _login_oidc(name, callback_addr)
    elif kind == "JWT":
        body: ACLLoginRequest = {"AuthMethodName": name, "LoginToken": login_token}
        token = http.put("/v1/acl/login", body)
    else:
        raise click.ClickException(f'Unsupported authentication type "{kind}"')
    if formatted(token, as_json, template):
        return
    click.echo(f"Successfully logged in via {kind} and {name}\n")
    print_token(token)
