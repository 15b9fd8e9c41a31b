"""Nomad's loadDataSource for flags such as -config: `@path` reads a file, `-` standard input,
anything else is the value itself."""

from __future__ import annotations

import sys
from pathlib import Path

import click


def load(raw: str, flag: str) -> str:
    if raw == "-":
        return sys.stdin.read()
    if raw.startswith("@"):
        try:
            return Path(raw[1:]).read_text()
        except OSError as err:
            raise click.UsageError(f"Error loading {flag}: cannot read {raw[1:]}: {err.strerror}") from err
    return raw
