"""`corral fmt`: rewrite job files (and other HCL) in the canonical layout, as `nomad fmt`:
files ending .nomad or .hcl, a directory's (-recursive: its subdirectories' too), or standard
input with `-`. Lists the files it changed and writes them; -check changes nothing and exits 1
if any file is not formatted; invalid HCL is reported and left alone (exit 1)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from app.cli.support.output import GoBoolCommand

SUFFIXES = (".nomad", ".hcl")


@click.command("fmt", cls=GoBoolCommand)
@click.option("-check", "--check", is_flag=True, help="Change nothing; exit 1 if a file is not formatted.")
@click.option(
    "-list/-no-list",
    "--list/--no-list",
    "list_",
    default=True,
    show_default=True,
    help="Print the files that changed (Nomad's -list=false hides them).",
)
@click.option(
    "-write/-no-write",
    "--write/--no-write",
    "write",
    default=True,
    show_default=True,
    help="Rewrite the files (-write=false prints them instead).",
)
@click.option("-recursive", "--recursive", is_flag=True, help="Also the files of subdirectories.")
@click.argument("paths", nargs=-1, metavar="[PATH]...")
def fmt(paths: tuple[str, ...], check: bool, list_: bool, write: bool, recursive: bool) -> None:
    """Rewrite PATHs (default: the current directory) in HCL's canonical layout (see
    app/cli/local/hcl_format.py for what it covers); `-` formats standard input to standard output."""
    from app.cli.local.hcl_format import format_hcl

    if paths == ("-",):
        source = sys.stdin.read()
        _parse(source, "<stdin>")
        click.echo(format_hcl(source), nl=False)
        return
    write = write and not check
    to_stdout = not list_ and not write and not check
    problems: list[str] = []
    unformatted = False
    for file in _files([Path(p) for p in paths or (".",)], recursive, problems):
        source = file.read_text()
        try:
            _parse(source, str(file))
        except click.ClickException as err:
            problems.append(err.message)
            continue
        formatted = format_hcl(source)
        if formatted == source:
            continue
        unformatted = True
        if list_:
            click.echo(str(file))
        if write:
            file.write_text(formatted)
        if to_stdout:
            click.echo(formatted, nl=False)
    for problem in problems:
        click.echo(problem, err=True)
    if problems or (check and unformatted):
        raise SystemExit(1)


def _files(paths: list[Path], recursive: bool, problems: list[str]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            pattern = "**/*" if recursive else "*"
            found += sorted(p for p in path.glob(pattern) if p.is_file() and p.name.endswith(SUFFIXES))
        elif path.is_file():
            found.append(path)
        else:
            problems.append(f"No file or directory at {path}")
    return found


def _parse(source: str, name: str) -> None:
    """Refuse what is not HCL (a file fmt would mangle), naming the file and the problem."""
    import hcl2
    from lark.exceptions import LarkError

    try:
        hcl2.loads(source)
    except (LarkError, ValueError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise click.ClickException(f"{name}: invalid HCL: {first}") from err
