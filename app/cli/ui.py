"""`corral ui [ID]`: open the web UI (or with -show-url print its address), on the page of the
node, allocation or job whose ID (or unique ID prefix) is given, resolved through the prefix
search API as Nomad's `ui` resolves it. With -authenticate the URL carries a one-time token
(`?ott=`, Nomad's parameter) that the UI exchanges for the CLI's token, so the browser is signed
in without the secret ever being pasted."""

from __future__ import annotations

import webbrowser
from urllib.parse import quote, urlencode, urlsplit, urlunsplit

import click

from app.cli.support import http

# The contexts the UI has pages for, in Nomad's order of precedence, and each page's path.
PAGES = (("nodes", "node"), ("allocs", "allocation"), ("jobs", "job"))


def _resolve(identifier: str) -> str:
    """The UI path of IDENTIFIER's object; a click error when none or several match."""
    found = http.post("/v1/search", {"Prefix": identifier, "Context": "all"}, params=http.scoped(None))
    matches: dict[str, list[str]] = found.get("Matches") or {}
    hits = [(context, page, ids) for context, page in PAGES if (ids := matches.get(context) or [])]
    exact = [(page, ids[0]) for _, page, ids in hits if ids[0] == identifier]
    unique = [(page, ids[0]) for _, page, ids in hits if len(ids) == 1]
    chosen = exact[:1] or (unique if len(hits) == 1 and len(unique) == 1 else [])
    if not chosen:
        if not hits:
            raise click.ClickException(f'Unable to resolve ID: "{identifier}"')
        listed = "\n".join(f"\n{context.capitalize()}:\n{', '.join(ids)}" for context, _, ids in hits)
        raise click.ClickException(f'Multiple matches found for id "{identifier}"\n{listed}')
    page, full_id = chosen[0]
    path = f"/ui/{page}/{quote(full_id, safe='')}"
    if page == "job":
        path += "?" + urlencode({"namespace": http.namespace() or "default"})
    return path


def _one_time_secret() -> str:
    """A one-time secret for the CLI's token (PUT /v1/acl/token/onetime), as Nomad's -authenticate."""
    try:
        made = http.put("/v1/acl/token/onetime", {})
    except click.ClickException as err:
        raise click.ClickException(f"Could not get one-time token: {err.message}") from None
    secret = (made.get("OneTimeToken") or {}).get("OneTimeSecretID") if isinstance(made, dict) else None
    if not isinstance(secret, str) or not secret:
        raise click.ClickException("Could not get one-time token: the answer carried no OneTimeSecretID")
    return secret


def with_one_time_token(url: str, secret: str) -> str:
    """`url` with ?ott=SECRET added to whatever query it has."""
    parts = urlsplit(url)
    query = "&".join(q for q in (parts.query, urlencode({"ott": secret})) if q)
    return urlunsplit(parts._replace(query=query))


@click.command()
@click.option("-show-url", "--show-url", "show_url", is_flag=True, help="Print the URL instead of opening a browser.")
@click.option(
    "-authenticate",
    "--authenticate",
    is_flag=True,
    help="Exchange the CLI's ACL token for a one-time token in the URL, which the UI turns back into the token.",
)
@click.argument("identifier", metavar="[ID]", required=False)
def ui(identifier: str | None, show_url: bool, authenticate: bool) -> None:
    """Open the web UI at CORRAL_ADDR, on the page of the node, allocation or job named by ID
    (a full ID or a unique prefix); without ID, on the cluster overview."""
    secret = _one_time_secret() if authenticate else ""
    page_url = http.address() + (_resolve(identifier) if identifier else "/ui/")
    url = with_one_time_token(page_url, secret) if secret else page_url
    if show_url:
        click.echo(f"URL for web UI: {url}")
        return
    # As Nomad, the secret stays out of the printed line (it is in the URL the browser gets).
    click.echo(f'Opening URL "{page_url}"' + (" with one-time token" if secret else ""))
    if not webbrowser.open(url):
        raise click.ClickException(f"Error opening URL: no browser found; open {url} yourself")
