"""Dynamic node metadata (Nomad's `nomad node meta apply`): key/value pairs set at run time,
kept in the client's data directory so they survive a restart, and merged over the static
`meta` of the client's configuration into the Meta it registers, so constraints and the
scheduler see them. A key applied as null removes it, a static key included (Nomad keeps the
null in Dynamic for that reason)."""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

FILE = "node_meta.json"
KEY = re.compile(r"^[^\s=]{1,128}$")  # Nomad refuses empty keys and keys with whitespace or '='


class NodeMetaResponse(TypedDict):
    """Nomad's api.NodeMetaResponse."""

    Meta: dict[str, str]
    Dynamic: dict[str, str | None]
    Static: dict[str, str]


class MetaError(ValueError):
    pass


def check(changes: Mapping[str, object]) -> dict[str, str | None]:
    """The changes as Nomad accepts them: string keys without whitespace or '=', each to a
    string or null."""
    checked: dict[str, str | None] = {}
    for key, value in changes.items():
        if not KEY.match(key):
            raise MetaError(f"invalid key {key!r}: 1-128 characters, no whitespace or '='")
        if value is not None and not isinstance(value, str):
            raise MetaError(f"value of {key!r} must be a string or null")
        checked[key] = value
    return checked


class NodeMeta:
    def __init__(self, data_dir: Path, static: Mapping[str, str]) -> None:
        self._path = data_dir / FILE
        self._static = dict(static)
        self._lock = threading.Lock()
        self._dynamic: dict[str, str | None] = {}
        try:
            saved = json.loads(self._path.read_text())
            self._dynamic = check(saved) if isinstance(saved, dict) else {}
        except (OSError, ValueError):
            self._dynamic = {}  # none saved yet, or unreadable: start from the configuration

    def merged(self) -> dict[str, str]:
        with self._lock:
            meta = {**self._static, **{k: v for k, v in self._dynamic.items() if v is not None}}
            return {k: v for k, v in meta.items() if self._dynamic.get(k, v) is not None}

    def response(self) -> NodeMetaResponse:
        meta = self.merged()
        with self._lock:
            return {"Meta": meta, "Dynamic": dict(self._dynamic), "Static": dict(self._static)}

    def apply(self, changes: Mapping[str, str | None]) -> None:
        """Merge and save (atomically: a crash leaves the old file or the new one)."""
        with self._lock:
            self._dynamic.update(changes)
            temporary = self._path.with_suffix(".tmp")
            temporary.unlink(missing_ok=True)
            with os.fdopen(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
                out.write(json.dumps(self._dynamic))
            temporary.replace(self._path)
