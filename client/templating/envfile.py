"""Reads an `env = true` template's output: KEY=VALUE lines, as Nomad's go-envparse does
(blank lines and # comments skipped, `export ` allowed, single and double quotes)."""

from __future__ import annotations

import re

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "\\": "\\", "$": "$"}


class EnvFileError(ValueError):
    pass


def parse_env(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("export "):
            line = line[len("export ") :].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _KEY.fullmatch(key):
            raise EnvFileError(f"line {number}: expected KEY=VALUE, got {raw!r}")
        out[key] = _value(value.strip(), number)
    return out


def _value(value: str, number: int) -> str:
    if value[:1] == "'":
        if len(value) < 2 or not value.endswith("'"):
            raise EnvFileError(f"line {number}: unterminated single-quoted value")
        return value[1:-1]
    if value[:1] != '"':
        return value
    out: list[str] = []
    i = 1
    while i < len(value):
        char = value[i]
        if char == "\\" and i + 1 < len(value):
            out.append(_ESCAPES.get(value[i + 1], "\\" + value[i + 1]))
            i += 2
            continue
        if char == '"':
            if value[i + 1 :].strip():
                raise EnvFileError(f"line {number}: text after the closing quote")
            return "".join(out)
        out.append(char)
        i += 1
    raise EnvFileError(f"line {number}: unterminated double-quoted value")
