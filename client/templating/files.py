"""Where a template is rendered and how its file is written: inside the allocation
directory only, atomically, with the block's perms, uid and gid."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path


class PathEscapes(ValueError):
    pass


def inside(task_dir: Path, relative: str, what: str) -> Path:
    """`relative` joined to the task directory (an absolute path too, as Nomad does); it must
    stay inside the allocation directory (the task directory's parent)."""
    alloc_dir = task_dir.parent.resolve()
    target = (task_dir / relative.lstrip("/")).resolve()
    if target != alloc_dir and alloc_dir not in target.parents:
        raise PathEscapes(f"template {what} path escapes alloc directory: {relative!r}")
    return target


def current(path: Path) -> str | None:
    try:
        return path.read_text()
    except (FileNotFoundError, IsADirectoryError, UnicodeDecodeError):
        return None


def write(path: Path, text: str, perms: int, uid: int | None, gid: int | None) -> None:
    """Replace the file in one step (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    try:
        temporary.write_text(text)
        temporary.chmod(perms)
        if uid is not None or gid is not None:
            os.chown(temporary, -1 if uid is None else uid, -1 if gid is None else gid)
        temporary.replace(path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()
