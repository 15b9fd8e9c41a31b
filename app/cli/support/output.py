"""Shared output for the read commands: Nomad's `-json` and `-t` flags, key = value blocks and
ID prefixes. `-t` takes a subset of Go's text/template (what Nomad's -t takes): `{{.}}`,
`{{.Field}}`, `{{ .A.B }}`, `{{range .List}}...{{end}}` (inside, `.` is the element),
`{{if .X}}...{{else}}...{{end}}`, `{{- ...}}`/`{{... -}}` trim. Nothing else (no functions,
variables or pipes): anything else is a usage error naming the action."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar, cast

import click

from app.cli.support import http
from app.wire.json import JsonObject

ACTION = re.compile(r"(\s*)\{\{(-?)\s*(.*?)\s*(-?)\}\}(\s*)", re.S)
FIELD = re.compile(r"^\.(?:[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)?$")

Node = tuple[str, Any]  # ("text", str) | ("field", str) | ("range", (field, body)) | ("if", (field, then, else))


class TemplateError(click.UsageError):
    pass


def _tokens(template: str) -> Iterator[tuple[str, str]]:
    pos = 0
    for match in ACTION.finditer(template):
        lead, left, action, right, trail = match.groups()
        text = template[pos : match.start()] + ("" if left else lead)
        if text:
            yield "text", text
        yield "action", action
        pos = match.end() - (0 if right else len(trail))
    if template[pos:]:
        yield "text", template[pos:]


def parse_template(template: str) -> list[Node]:
    tokens = list(_tokens(template))
    nodes, rest, stop = _parse(tokens, 0)
    if stop is not None:
        raise TemplateError(f"template: unexpected {{{{{stop}}}}}")
    del rest
    return nodes


def _parse(tokens: list[tuple[str, str]], at: int) -> tuple[list[Node], int, str | None]:
    nodes: list[Node] = []
    while at < len(tokens):
        kind, value = tokens[at]
        at += 1
        if kind == "text":
            nodes.append(("text", value))
            continue
        word, _, arg = value.partition(" ")
        if word in ("end", "else"):
            return nodes, at, word
        if word in ("range", "if"):
            field = _field(arg.strip())
            body, at, stop = _parse(tokens, at)
            other: list[Node] = []
            if stop == "else" and word == "if":
                other, at, stop = _parse(tokens, at)
            if stop != "end":
                raise TemplateError(f"template: {{{{{value}}}}} has no {{{{end}}}}")
            nodes.append((word, (field, body, other)))
            continue
        nodes.append(("field", _field(value)))
    return nodes, at, None


def _field(text: str) -> str:
    if not FIELD.match(text):
        raise TemplateError(f"template: unsupported action {{{{{text}}}}} (supported: .Field, range, if, else, end)")
    return text


def _lookup(dot: Any, field: str) -> Any:
    value = dot
    for name in filter(None, field.split(".")):
        if not isinstance(value, Mapping) or name not in value:
            return None
        value = value[name]
    return value


def _text(value: object) -> str:
    if value is None:
        return "<no value>"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, Mapping | list):
        return json.dumps(value)
    return str(value)


def render_template(template: str, data: Any) -> str:
    out: list[str] = []

    def walk(nodes: list[Node], dot: Any) -> None:
        for kind, value in nodes:
            if kind == "text":
                out.append(value)
            elif kind == "field":
                out.append(_text(_lookup(dot, value)))
            elif kind == "range":
                field, body, _ = value
                items = _lookup(dot, field)
                for item in items.values() if isinstance(items, Mapping) else items or []:
                    walk(body, item)
            else:
                field, then, other = value
                walk(then if _lookup(dot, field) else other, dot)

    walk(parse_template(template), data)
    return "".join(out)


def format_options(command: Any) -> Any:
    """Nomad's -json and -t for a read command."""
    command = click.option(
        "-t",
        "template",
        metavar="TEMPLATE",
        help="Format the API object with a Go template subset ({{.Field}}, {{.A.B}}, {{range .X}}...{{end}}, {{if}}).",
    )(command)
    return click.option("-json", "--json", "as_json", is_flag=True, help="Print the API object as JSON.")(command)


def formatted(data: Any, as_json: bool, template: str | None) -> bool:
    """Print DATA as -json or -t asked; False when neither was given (the caller prints its layout)."""
    if as_json and template:
        raise click.UsageError("give -json or -t, not both")
    if as_json:
        click.echo(json.dumps(data, indent=4))
        return True
    if template is not None:
        click.echo(render_template(template, data), nl=False)
        return True
    return False


def key_values(pairs: Sequence[tuple[str, object]]) -> list[str]:
    """Nomad's `Key = value` block, the equals signs aligned."""
    width = max(len(key) for key, _ in pairs)
    return [f"{key.ljust(width)} = {value}" for key, value in pairs]


def date(nanos: Any) -> str:
    return datetime.fromtimestamp(int(nanos) / 1e9, UTC).strftime("%Y-%m-%dT%H:%M:%SZ") if nanos else ""


def ago(nanos: Any) -> str:
    if not nanos:
        return ""
    seconds = int(datetime.now(UTC).timestamp() - int(nanos) / 1e9)
    if seconds < 60:
        return f"{max(seconds, 0)}s ago"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60}s ago"
    if seconds < 86400:
        return f"{seconds // 3600}h{seconds % 3600 // 60}m ago"
    return date(nanos)


HEX = frozenset("0123456789abcdefABCDEF-")


Item = TypeVar("Item")  # one row of a kind's list route, as its layout reads it


def resolve(
    kind: str,
    route: str,
    prefix: str,
    layout: Callable[[list[Item], bool], str],
    *,
    full_length: int = 36,
    base: str | None = None,
) -> str:
    """The one full ID of a KIND starting with PREFIX: Nomad accepts any unique prefix of at least
    two characters, and answers an ambiguous one with "Prefix matched multiple <kind>s" and the
    matches in the kind's list LAYOUT (exit 1). The caller passes the layout: the kinds' modules
    import this one, so it cannot import them."""
    if len(prefix) == full_length:
        return prefix
    if len(prefix) < 2:
        raise click.ClickException("Identifier must contain at least two characters.")
    # IDs are UUIDs: a prefix that is not hex names none (and the list routes refuse it).
    query = {"prefix": prefix, "namespace": "*"}
    found = http.request("GET", route, params=query, base=base) if set(prefix) <= HEX else []
    items: list[JsonObject] = [item for item in found if isinstance(item, dict)] if isinstance(found, list) else []
    if not items:
        raise click.ClickException(f'No {kind}(s) with prefix or id "{prefix}" found')
    if len({str(item["ID"]) for item in items}) > 1:
        matches = cast("list[Item]", items)  # the kind's own list route answered them
        raise click.ClickException(f"Prefix matched multiple {kind}s\n\n{layout(matches, False)}")
    return str(items[0]["ID"])


def columns(rows: list[list[str]]) -> list[str]:
    """Left-aligned columns two spaces apart, without trailing blanks."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return ["  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip() for row in rows]


def listing(route: str) -> Callable[[str], list[JsonObject]]:
    def fetch(prefix: str) -> list[JsonObject]:
        found = http.get(route, {"prefix": prefix, "namespace": "*"})
        return list(found) if isinstance(found, list) else []

    return fetch


class GoBoolCommand(click.Command):
    """A command whose on/off flags (declared `-name/-no-name`) also take Go's `-name=false` and
    `-name=true`, as Nomad's flags do: rewritten to click's spelling before parsing."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        switches = {
            opt.lstrip("-"): (opt, secondary)
            for param in self.params
            if isinstance(param, click.Option) and param.secondary_opts
            for opt, secondary in zip(param.opts, param.secondary_opts, strict=False)
        }
        rewritten = []
        for arg in args:
            name, sep, value = arg.partition("=")
            on_off = switches.get(name.lstrip("-")) if sep and name.startswith("-") else None
            if on_off is not None and value.lower() in ("true", "1", "t", "false", "0", "f"):
                arg = on_off[0] if value.lower() in ("true", "1", "t") else on_off[1]
            rewritten.append(arg)
        return super().parse_args(ctx, rewritten)
