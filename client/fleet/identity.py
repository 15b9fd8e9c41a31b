"""The simulated fleet's node identities, kept across restarts as `corral client` keeps its node
ID and secret in its data directory: a restarted fleet takes its nodes back (and the allocations
placed on them) instead of registering new nodes and leaving the old ones to expire."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import dataclass
from pathlib import Path

FILE_NAME = "fleet-nodes.json"


class IdentityFileError(Exception):
    """The identity file exists but cannot be used; the fleet refuses to start rather than
    silently registering a second set of nodes under the same names."""


@dataclass(frozen=True)
class Identity:
    id: uuid.UUID
    name: str
    secret: str


def node_names(prefix: str, count: int) -> list[str]:
    return [f"{prefix}-{i:05}" for i in range(count)]


def identities(names: list[str], data_dir: Path | None) -> list[Identity]:
    """One identity per name: the kept one if `data_dir` holds it, else a new one (then kept)."""
    if data_dir is None:
        return [_new(name) for name in names]
    path = data_dir / FILE_NAME
    kept = _load(path)
    chosen = [kept.get(name) or _new(name) for name in names]
    if any(kept.get(i.name) != i for i in chosen):
        _save(path, {**kept, **{i.name: i for i in chosen}})
    return chosen


def _new(name: str) -> Identity:
    return Identity(uuid.uuid4(), name, str(uuid.uuid4()))


def _load(path: Path) -> dict[str, Identity]:
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        raise IdentityFileError(f"{path}: cannot read the fleet's node identities: {err}") from err
    try:
        found = {str(n["Name"]): Identity(uuid.UUID(str(n["ID"])), str(n["Name"]), str(n["SecretID"])) for n in raw}
    except (TypeError, KeyError, ValueError) as err:
        raise IdentityFileError(f"{path}: not a list of {{ID, Name, SecretID}} objects: {err!r}") from err
    return found


def _save(path: Path, kept: dict[str, Identity]) -> None:
    """Atomically, readable by the owner only: it holds every node's secret."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    body = [{"ID": str(i.id), "Name": i.name, "SecretID": i.secret} for i in kept.values()]
    partial = path.with_suffix(".tmp")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        json.dump(body, out)
        out.flush()
        os.fsync(out.fileno())
    os.replace(partial, path)
