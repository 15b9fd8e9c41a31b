"""`corral ui [ID]`: open the web UI (or with -show-url print its address), on the page of the
node, allocation or job whose ID (or unique ID prefix) is given, resolved through the prefix
search API as Nomad's `ui` resolves it."""

from __future__ import annotations

import webbrowser
from urllib.parse import quote, urlencode

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


@click.command()
@click.option("-show-url", "--show-url", "show_url", is_flag=True, help="Print the URL instead of opening a browser.")
@click.argument("identifier", metavar="[ID]", required=False)
def ui(identifier: str | None, show_url: bool) -> None:
    """Open the web UI at CORRAL_ADDR, on the page of the node, allocation or job named by ID
    (a full ID or a unique prefix); without ID, on the cluster overview."""
    url = http.address() + (_resolve(identifier) if identifier else "/ui/")
    if show_url:
        click.echo(f"URL for web UI: {url}")
        return
    click.echo(f'Opening URL "{url}"')
    if not webbrowser.open(url):
        raise click.ClickException(f"Error opening URL: no browser found; open {url} yourself")
