"""`corral operator api`: Nomad's curl-like command, a request to any route with the CLI's
address, token, namespace and region; the answer's body is printed as it came."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import click

from app.cli.support import http


def _header_pairs(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> dict[str, str]:
    headers: dict[str, str] = {}
    for value in values:
        name, sep, text = value.partition(":")
        if not sep or not name.strip():
            raise click.BadParameter(f"expected 'Name: value', got {value!r}", ctx=ctx, param=param)
        headers[name.strip()] = text.strip()
    return headers


@click.command("api")
@click.option(
    "-X", "method", default=None, metavar="METHOD", help="HTTP method [default: GET, POST with a body on stdin]."
)
@click.option(
    "-H", "headers", multiple=True, callback=_header_pairs, metavar="'NAME: VALUE'", help="Extra header; repeatable."
)
@click.option("-filter", "--filter", "filter_", default=None, help="A filter expression, sent as ?filter=.")
@click.option("-dryrun", "--dryrun", is_flag=True, help="Print the equivalent curl command instead of sending it.")
@click.option("-verbose", "--verbose", is_flag=True, help="Print the request and answer headers on stderr.")
@click.argument("path")
def api(
    path: str, method: str | None, headers: dict[str, str], filter_: str | None, dryrun: bool, verbose: bool
) -> None:
    """Send a request to PATH (e.g. /v1/jobs, or a whole URL) with the CLI's address, token,
    namespace and region, and print the answer's body. A body piped on stdin (JSON) is sent,
    with POST unless -X says otherwise. Exit 0 once an answer came, whatever its status, as Nomad's."""
    body: Any = None
    if not sys.stdin.isatty():
        text = sys.stdin.read()
        # An empty stdin (a script's /dev/null, a CI runner) is no body: the request stays a GET.
        if text.strip():
            try:
                body = json.loads(text)
            except json.JSONDecodeError as err:
                raise click.ClickException(f"Error reading stdin: the body is not JSON ({err})") from err
            method = method or "POST"
    method = (method or "GET").upper()
    url = _url(path, filter_)
    sent = {**http.auth_headers(), **headers}
    if dryrun:
        click.echo(_curl(method, url, sent, body))
        return
    if verbose:
        click.echo(f"> {method} {url}", err=True)
        for name, value in sent.items():
            click.echo(f"> {name}: {'<hidden>' if name == 'X-Nomad-Token' else value}", err=True)
    answer = http.send(method, url, body, sent, http.TIMEOUT_S)
    if verbose:
        click.echo(f"< {answer.status_code} {answer.reason_phrase}", err=True)
    click.echo(answer.content, nl=False)


def _url(path: str, filter_: str | None) -> str:
    """PATH on the CLI's address (or a whole URL), with the query the CLI adds to every request."""
    parts = urlsplit(path)
    base = f"{parts.scheme}://{parts.netloc}" if parts.scheme else http.address()
    given: dict[str, http.QueryValue] = dict(parse_qsl(parts.query))
    if filter_ is not None:
        given["filter"] = filter_
    query = http.scoped(given) or {}
    target = parts.path if parts.path.startswith("/") else "/" + parts.path
    return base + target + (f"?{urlencode(query)}" if query else "")


def _curl(method: str, url: str, headers: dict[str, str], body: Any) -> str:
    words = ["curl", *(["-X", method] if method != "GET" else [])]
    for name, value in headers.items():
        words += ["-H", f"{name}: {value}"]
    if body is not None:
        words += ["--data-binary", json.dumps(body)]
    return " ".join(shlex.quote(word) for word in [*words, url])
