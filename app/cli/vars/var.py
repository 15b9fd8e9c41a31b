"""`corral var get | put | list | purge | lock | init`: Nomad Variables through the REST API,
with Nomad's flags, layouts and check-and-set behaviour (command/var_*.go). `put` without
-force or -check-index only creates: an existing variable is a check-and-set conflict, as in
Nomad."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any
from urllib.parse import quote

import click

from app.cli.support import http
from app.cli.support.output import date, key_values, render_template
from app.wire.api.api_variables import VariableJson, VariableMetaJson
from app.wire.json import JsonObject

WILDCARD = "*"
GET_FORMATS = ("go-template", "hcl", "json", "none", "table")
LIST_FORMATS = ("go-template", "json", "table", "terse")
NO_MATCH = "No matching variables found"
HCL_SPEC = """# A variable specification for `corral var put @spec.nv.hcl`.
#
# path and namespace may be given here or on the command line (the command line wins):
# path      = "nomad/jobs/example"
# namespace = "default"

# items is the only part a specification needs: the values to encrypt and store. They are
# encrypted and decrypted together, as one unit.
items {
  key1 = "value 1"
  key2 = "value 2"
}
"""
JSON_SPEC = json.dumps({"Items": {"key1": "value 1", "key2": "value 2"}}, indent=2) + "\n"


def namespace_option(command: Any) -> Any:
    return click.option(
        "-namespace",
        "--namespace",
        "namespace",
        default="default",
        show_default=True,
        help="Namespace of the variable.",
    )(command)


@click.group("var")
def var() -> None:
    """Nomad Variables: encrypted key/value items at a path, readable by tasks of the jobs
    the path names (nomad/jobs/<job>[/<group>[/<task>]])."""


def _path(path: str) -> str:
    return "/v1/var/" + quote(path, safe="/-_~")


def _single(namespace: str) -> str:
    if namespace == WILDCARD:
        raise click.UsageError('The wildcard namespace ("*") is not valid for this command.')
    return namespace


def _out_default(value: str | None, terminal: str) -> str:
    """Nomad's default -out: `terminal` on a terminal, json when stdout is redirected."""
    return value or (terminal if sys.stdout.isatty() else "json")


def _render(found: VariableJson, out: str, template: str | None) -> str:
    if out == "json":
        return json.dumps(found, indent=2)
    if out == "hcl":
        return _hcl(found)
    if out == "go-template":
        if template is None:
            raise click.UsageError("A template must be supplied using '-template' when using go-template formatting")
        return render_template(template, found)
    return _table(found)


def _table(found: VariableJson) -> str:
    meta: list[tuple[str, object]] = [
        ("Namespace", found["Namespace"]),
        ("Path", found["Path"]),
        ("Create Time", date(found["CreateTime"])),
    ]
    if found["CreateTime"] != found["ModifyTime"]:
        meta.append(("Modify Time", date(found["ModifyTime"])))
    meta.append(("Check Index", found["ModifyIndex"]))
    items = sorted((found.get("Items") or {}).items())
    lines = [*key_values(meta), "", "Items"]
    lines.extend(key_values(items) if items else [])
    return "\n".join(lines)


def _hcl(found: VariableJson) -> str:
    items = found.get("Items") or {}
    width = max([len(k) for k in items] or [0])
    body = "".join(f"  {key.rjust(width)} = {json.dumps(value)}\n" for key, value in sorted(items.items()))
    return (
        f'namespace    = "{found["Namespace"]}"\n'
        f'path         = "{found["Path"]}"\n'
        f"create_index = {found['CreateIndex']}  # Set by server\n"
        f"modify_index = {found['ModifyIndex']}  # Set by server; consulted for check-and-set\n"
        f"create_time  = {found['CreateTime']}   # Set by server\n"
        f"modify_time  = {found['ModifyTime']}   # Set by server\n\n"
        f"items = {{\n{body}}}"
    )


@var.command("get")
@namespace_option
@click.option("-item", "item", default=None, help="Print only the value of this item (no trailing newline).")
@click.option("-out", "out", type=click.Choice(GET_FORMATS), default=None, help="Output format.")
@click.option("-template", "template", default=None, help="Template for -out go-template.")
@click.argument("path")
def get(path: str, namespace: str, item: str | None, out: str | None, template: str | None) -> None:
    """Print the variable at PATH."""
    try:
        found = http.get(_path(path), {"namespace": _single(namespace)})
    except http.ApiError as err:
        if err.status == 404:
            raise click.ClickException("Variable not found") from None
        raise
    if item is not None:
        items = found.get("Items") or {}
        if item not in items:
            raise click.ClickException(f"Variable does not contain {item!r} item")
        click.echo(items[item], nl=False)
        return
    chosen = _out_default(out, "table")
    if chosen != "none":
        click.echo(_render(found, chosen, template))


@var.command("list")
@namespace_option
@click.option("-per-page", "per_page", type=int, default=0, help="How many results to show per page.")
@click.option("-page-token", "page_token", default="", help="Where to start pagination.")
@click.option("-filter", "filter_", default="", help="Filter expression over the variables' metadata.")
@click.option("-out", "out", type=click.Choice(LIST_FORMATS), default=None, help="Output format.")
@click.option("-template", "template", default=None, help="Template for -out go-template.")
@click.argument("prefix", required=False, default="")
def list_(
    prefix: str, namespace: str, per_page: int, page_token: str, filter_: str, out: str | None, template: str | None
) -> None:
    """List the variables whose path starts with PREFIX (the token's listable paths only)."""
    params: dict[str, http.QueryValue] = {"namespace": namespace, "prefix": prefix}
    if per_page:
        params["per_page"] = per_page
    if page_token:
        params["next_token"] = page_token
    if filter_:
        params["filter"] = filter_
        click.echo("Filter queries require a full scan of the data; use prefix searching where possible", err=True)
    answer = _send("GET", "/v1/vars", params)
    found = answer.json()
    next_token = answer.headers.get("X-Nomad-NextToken", "")
    chosen = _out_default(out, "table")
    if chosen == "json":
        wrapped = {"Data": found, "QueryMeta": {"NextToken": next_token}} if per_page else found
        click.echo(json.dumps(wrapped, indent=2))
        return
    if chosen == "terse":
        for item in found:
            click.echo(f"{item['Namespace']}|{item['Path']}" if namespace == WILDCARD else item["Path"])
    elif chosen == "go-template":
        if template is None:
            raise click.UsageError("A template must be supplied using '-template' when using go-template formatting")
        click.echo(render_template(template, found))
    else:
        click.echo(_stubs(found))
    if next_token:
        click.echo(f"Next page token: {next_token}", err=True)


def _stubs(found: list[VariableMetaJson]) -> str:
    if not found:
        return NO_MATCH
    rows = [("Namespace", "Path", "Last Updated")] + [
        (v["Namespace"], v["Path"], date(v["ModifyTime"]))
        for v in sorted(found, key=lambda v: (v["Namespace"], v["Path"]))
    ]
    widths = [max(len(str(row[i])) for row in rows) for i in range(3)]
    return "\n".join("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in rows)


def _send(method: str, route: str, params: http.QueryParams | None = None, body: object = None) -> http.Answer:
    """A request whose answer the command reads whatever its status (a 409 carries the conflict)."""
    url = http.address() + route + http.query_string(params)
    answer = http.send(method, url, body, http.auth_headers(), http.TIMEOUT_S)
    if answer.status_code >= 400 and answer.status_code != 409:
        raise http.ApiError(f"{method} {route}: {answer.status_code} {http.problem_text(answer)}", answer.status_code)
    return answer


def _cas_conflict(check_index: int, conflict: VariableJson) -> click.ClickException:
    last = (
        f" The server-side item was last updated on {date(conflict['ModifyTime'])}."
        if conflict.get("ModifyIndex")
        else ""
    )
    return click.ClickException(
        f"Check-and-Set conflict: your provided check-index ({check_index}) does not match the server-side index "
        f"({conflict.get('ModifyIndex', 0)}).{last} If you are sure you want to perform this operation, add the "
        f"-force or -check-index={conflict.get('ModifyIndex', 0)} flag before the positional arguments."
    )


@var.command("purge")
@namespace_option
@click.option("-check-index", "check_index", type=int, default=None, help="Only purge at this modify index.")
@click.argument("path")
def purge(path: str, namespace: str, check_index: int | None) -> None:
    """Delete the variable at PATH for good."""
    params: dict[str, http.QueryValue] = {"namespace": _single(namespace)}
    if check_index is not None:
        params["cas"] = check_index
    answer = _send("DELETE", _path(path), params)
    if answer.status_code == 409:
        raise _cas_conflict(check_index or 0, answer.json())
    click.echo(f"Successfully purged variable {path!r}!".replace("'", '"'))


@var.command("init")
@click.option("-out", "out", type=click.Choice(("hcl", "json")), default="hcl", show_default=True)
@click.option("-quiet", "quiet", is_flag=True, help="Do not print the success message.")
@click.argument("filename", required=False)
def init(out: str, quiet: bool, filename: str | None) -> None:
    """Write an example variable specification (spec.nv.hcl or spec.nv.json)."""
    target = Path(filename or f"spec.nv.{out}")
    if target.exists():
        raise click.ClickException(f"File {str(target)!r} already exists".replace("'", '"'))
    target.write_text(HCL_SPEC if out == "hcl" else JSON_SPEC)
    target.chmod(0o660)
    if not quiet:
        click.echo(f"Example variable specification written to {target}")


@var.command("put")
@namespace_option
@click.option("-check-index", "check_index", type=int, default=None, help="Only write at this modify index.")
@click.option("-force", "force", is_flag=True, help="Write whatever the server-side index.")
@click.option("-in", "in_", type=click.Choice(("hcl", "json")), default="json", help="Format of a spec on stdin.")
@click.option("-out", "out", type=click.Choice(GET_FORMATS), default=None, help="Output format.")
@click.option("-template", "template", default=None, help="Template for -out go-template.")
@click.option("-verbose", "verbose", is_flag=True, help="Report on stderr what was written.")
@click.argument("args", nargs=-1, required=True)
def put(
    args: tuple[str, ...],
    namespace: str,
    check_index: int | None,
    force: bool,
    in_: str,
    out: str | None,
    template: str | None,
    verbose: bool,
) -> None:
    """Create or update a variable: `put PATH [@spec|-] [key=value|key=@file|key=-]...` or
    `put @spec [key=value]...`. Without -force or -check-index only a new variable is written."""
    spec, rest = _spec_and_items(list(args), in_)
    path = str(spec.get("Path") or "")
    if rest and not rest[0].startswith("@") and rest[0] != "-" and "=" not in rest[0]:
        path, rest = rest[0], rest[1:]
        if rest and (rest[0].startswith("@") or rest[0] == "-"):
            spec = {**_read_spec(rest[0], in_), **({"Path": path})}
            rest = rest[1:]
    if not path:
        raise click.UsageError("Not enough arguments: give the variable's path")
    items = _items(spec)
    items.update(_pairs(rest))
    if not items:
        raise click.UsageError("Must supply data")
    ns = _single(str(spec.get("Namespace") or namespace) if namespace == "default" else namespace)
    modify_index = spec.get("ModifyIndex") or 0
    cas = (
        check_index
        if check_index is not None
        else int(modify_index)
        if isinstance(modify_index, int | float | str)
        else 0
    )
    params: dict[str, http.QueryValue] = {"namespace": ns} | ({} if force else {"cas": cas})
    answer = _send("PUT", _path(path), params, {"Namespace": ns, "Path": path, "Items": items})
    if answer.status_code == 409:
        raise _cas_conflict(cas, answer.json())
    written = answer.json()
    message = f'Created variable "{written["Path"]}" with modify index {written["ModifyIndex"]}'
    chosen = _out_default(out, "none")
    if chosen == "none":
        click.echo(message)
        return
    if verbose:
        click.echo(message, err=True)
    click.echo(_render(written, chosen, template))


def _spec_and_items(args: list[str], in_: str) -> tuple[JsonObject, list[str]]:
    """A leading @file or - is a whole specification; the rest are path and items."""
    if args and (args[0].startswith("@") or args[0] == "-"):
        return _read_spec(args[0], in_), args[1:]
    return {}, args


def _read_spec(source: str, in_: str) -> JsonObject:
    """A specification in Nomad's JSON (the API's Variable) or HCL (path, namespace, items)."""
    if source == "-":
        text, kind = sys.stdin.read(), in_
    else:
        file = Path(source[1:])
        try:
            text = file.read_text()
        except OSError as err:
            raise click.ClickException(f"Error reading {str(file)!r}: {err}") from None
        kind = "hcl" if file.suffix == ".hcl" else "json" if file.suffix == ".json" else in_
    try:
        if kind == "json":
            found = json.loads(text)
            return found if isinstance(found, dict) else {}
        import hcl2

        options = hcl2.SerializationOptions(strip_string_quotes=True, with_comments=False)
        parsed = hcl2.loads(text, serialization_options=options)
    except Exception as err:  # hcl2 raises lark's error types for bad input
        raise click.ClickException(f"Failed to parse variable data: {str(err).splitlines()[0]}") from None
    items = parsed.get("items") or {}
    items = items[0] if isinstance(items, list) and items else items
    return {
        "Path": parsed.get("path", ""),
        "Namespace": parsed.get("namespace", ""),
        "Items": {str(k): str(v) for k, v in items.items() if k != "__is_block__"} if isinstance(items, dict) else {},
    }


def _items(spec: JsonObject) -> JsonObject:
    """The spec's Items (an object, or none), as it gave them: the server checks they are strings."""
    given = spec.get("Items")
    return dict(given) if isinstance(given, dict) else {}


def _pairs(args: list[str]) -> dict[str, str]:
    """key=value, key=@file (the file's content) or key=- (stdin)."""
    found: dict[str, str] = {}
    for arg in args:
        key, sep, value = arg.partition("=")
        if not sep or not key:
            raise click.UsageError(f"Failed to parse K=V data: {arg!r} is not key=value")
        if value == "-":
            value = sys.stdin.read()
        elif value.startswith("@"):
            try:
                value = Path(value[1:]).read_text()
            except OSError as err:
                raise click.ClickException(f"error reading {value[1:]!r}: {err}") from None
        found[key] = value
    return found


@var.command("lock", context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False})
@namespace_option
@click.option("-ttl", "ttl", default="15s", show_default=True, help="TTL of the lock; renewed at half of it.")
@click.option("-delay", "delay", default="15s", show_default=True, help="Lock delay after a lost lock.")
@click.option("-early-return", "early_return", is_flag=True, help="Give up if the lock is held, rather than wait.")
@click.option("-backoff", "backoff", default="", help="Wait between attempts (default 1.1 times the TTL).")
@click.option("-shell/-no-shell", "shell", default=True, help="Run the child through $SHELL (default /bin/sh).")
@click.option("-verbose", "verbose", is_flag=True, help="Report the lock's progress on stderr.")
@click.argument("args", nargs=-1, required=True, type=click.UNPROCESSED)
def lock(
    args: tuple[str, ...],
    namespace: str,
    ttl: str,
    delay: str,
    early_return: bool,
    backoff: str,
    shell: bool,
    verbose: bool,
) -> None:
    """Hold a lock on the variable at PATH while a child command runs: `lock PATH [@spec]
    CHILD...`. The lock is renewed while the child runs; if it is lost, the child is stopped."""
    from app.cli.vars.var_lock import LockHolder, parse_seconds

    spec, rest = _spec_and_items(list(args), "json")
    path = str(spec.get("Path") or "")
    if not path:
        if not rest:
            raise click.UsageError("give the variable's path and a child command")
        path, rest = rest[0], rest[1:]
        if rest and rest[0].startswith("@"):
            spec, rest = _read_spec(rest[0], "json"), rest[1:]
    if not rest:
        raise click.UsageError("give a child command to run while the lock is held")
    holder = LockHolder(
        route=_path(path),
        namespace=_single(namespace),
        body={
            "Namespace": namespace,
            "Path": path,
            "Items": _items(spec),
            "Lock": {"TTL": ttl, "LockDelay": delay},
        },
        ttl_s=parse_seconds(ttl, "-ttl"),
        backoff_s=parse_seconds(backoff, "-backoff") if backoff else 1.1 * parse_seconds(ttl, "-ttl"),
        verbose=verbose,
    )
    sys.exit(holder.run(list(rest), shell=shell, early_return=early_return))
