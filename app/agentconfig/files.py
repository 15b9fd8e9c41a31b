"""Reading agent configuration files as Nomad reads them: a directory means every *.hcl and
*.json file in it (not hidden ones, not sub-directories) in lexical order; each file parses to
one nested object whose blocks are objects (a labeled block: label -> body), and files merge in
order, later files winning per key and blocks merging key by key."""

from __future__ import annotations

import json
from pathlib import Path

from app.wire.json import JsonObject, JsonValue

SUFFIXES = (".hcl", ".json")
_BOOKKEEPING = ("__is_block__", "__comments__", "__inline_comments__")
# Lists that add up across files instead of the later one replacing them, as in Nomad.
APPENDED = {("client", "servers")}


class AgentConfigError(ValueError):
    """A file that cannot be read, or a key or value the agent cannot use; the message names the
    file, the block and the key."""


def config_files(paths: list[Path]) -> list[Path]:
    """The files the -config paths name, in the order they merge."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(
                p for p in path.iterdir() if p.suffix in SUFFIXES and p.is_file() and not p.name.startswith(".")
            )
            if not inside:
                raise AgentConfigError(f"{path}: no *.hcl or *.json config files in this directory")
            found.extend(inside)
        elif path.is_file():
            found.append(path)
        else:
            raise AgentConfigError(f"{path}: no such file or directory")
    return found


def parse_file(path: Path) -> JsonObject:
    """One file as a nested object (HCL unless it ends in .json)."""
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise AgentConfigError(f"{path}: cannot read it: {err}") from None
    document = _parse_json(path, text) if path.suffix == ".json" else _parse_hcl(path, text)
    found = normalize(document)
    if not isinstance(found, dict):
        raise AgentConfigError(f"{path}: must hold an object of settings")
    return found


def _parse_json(path: Path, text: str) -> JsonValue:
    try:
        found: JsonValue = json.loads(text)
    except json.JSONDecodeError as err:
        raise AgentConfigError(f"{path}: invalid JSON: {err}") from None
    return found


def _parse_hcl(path: Path, text: str) -> JsonValue:
    import hcl2  # here only: the CLI's start-up imports no parser (tests/unit/test_cli_imports.py)

    options = hcl2.SerializationOptions(strip_string_quotes=True, explicit_blocks=True, with_comments=False)
    try:
        found: JsonValue = hcl2.loads(text, serialization_options=options)
    except Exception as err:  # python-hcl2 raises lark's exceptions and plain errors for bad input
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise AgentConfigError(f"{path}: invalid HCL: {first}") from None
    return found


def normalize(value: JsonValue) -> JsonValue:
    """Blocks as objects: HCL's list of block bodies (and JSON's list of objects, as Nomad's JSON
    files write blocks) merges into one object; a labeled block's list of {label: body} merges
    into {label: body, ...}. Other lists stay lists."""
    if isinstance(value, dict):
        return {key: normalize(item) for key, item in value.items() if key not in _BOOKKEEPING}
    if isinstance(value, list):
        items = [normalize(item) for item in value]
        if items and all(isinstance(item, dict) for item in items):
            merged: JsonObject = {}
            for item in items:
                assert isinstance(item, dict)
                merged = merge(merged, item)
            return merged
        return items
    return value


def merge(first: JsonObject, second: JsonObject, path: tuple[str, ...] = ()) -> JsonObject:
    """`second` over `first`: objects merge key by key, client.servers adds up, anything else
    from `second` replaces what `first` had."""
    result = dict(first)
    for key, value in second.items():
        here = (*path, key)
        before = result.get(key)
        if isinstance(before, dict) and isinstance(value, dict):
            result[key] = merge(before, value, here)
        elif here in APPENDED and isinstance(before, list) and isinstance(value, list):
            result[key] = [*before, *(item for item in value if item not in before)]
        else:
            result[key] = value
    return result
