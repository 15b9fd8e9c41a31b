"""The allocation directory as Nomad's client fs API shows it (ls, stat, cat, readat): paths are
relative to the allocation's directory and may not leave it, not even through a symlink, and no
task's secrets/ may be read (Nomad lists and stats it, but refuses to read from it)."""

from __future__ import annotations

import mimetypes
import stat as stat_mode
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from app.acl.client_link import MAX_READ_BYTES

# The client's own record of the allocation lives in its directory; it is not the task's.
HIDDEN = frozenset({"alloc.json", "alloc.tmp"})
SNIFF_BYTES = 512
MAX_READ = MAX_READ_BYTES  # one answer's most; readat pages through bigger files


class FsError(Exception):
    """A request the allocation directory cannot answer: HTTP status, the field at fault, why."""

    def __init__(self, status: int, field: str, message: str) -> None:
        super().__init__(message)
        self.status, self.field, self.message = status, field, message


def resolve(alloc_dir: Path, relative: str) -> Path:
    """The path inside the allocation directory; FsError 400 naming `path` if it escapes (by
    `..` or by a symlink that points outside), 404 for the client's own record."""
    if "\x00" in relative:
        raise FsError(400, "path", "must not contain NUL")
    root = alloc_dir.resolve()
    target = (root / relative.lstrip("/")).resolve()
    if target != root and root not in target.parents:
        raise FsError(400, "path", f"{relative!r} escapes the allocation directory")
    if target.parent == root and target.name in HIDDEN:
        raise FsError(404, "path", f"{relative!r}: no such file or directory")
    return target


def _mode_string(mode: int) -> str:
    """Go's FileMode.String(): 'drwxr-xr-x', '-rw-r--r--', 'Lrwxrwxrwx' for a symlink."""
    text = stat_mode.filemode(mode)
    return "L" + text[1:] if text.startswith("l") else text


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")


def file_info(path: Path, with_content_type: bool) -> dict[str, Any]:
    """Nomad's AllocFileInfo (ContentType only from stat, as Nomad's List leaves it out)."""
    found = path.lstat() if path.is_symlink() else path.stat()
    info: dict[str, Any] = {
        "Name": path.name,
        "IsDir": stat_mode.S_ISDIR(found.st_mode),
        "Size": found.st_size,
        "FileMode": _mode_string(found.st_mode),
        "ModTime": _time(found.st_mtime),
    }
    if with_content_type:
        info["ContentType"] = content_type(path, info["IsDir"])
    return info


def content_type(path: Path, is_dir: bool) -> str:
    """Best effort, as Nomad's: JSON by its extension, else text when the first bytes decode as
    UTF-8, else by the extension, else octet-stream."""
    if path.name.endswith(".json"):
        return "application/json"
    if is_dir or not path.is_file():  # never open a FIFO or device to sniff it
        return "application/octet-stream"
    try:
        with path.open("rb") as handle:
            head = handle.read(SNIFF_BYTES)
    except OSError:
        return "application/octet-stream"
    try:
        head.decode("utf-8")
        return "text/plain; charset=utf-8"
    except UnicodeDecodeError:
        guessed, _ = mimetypes.guess_type(path.name)
        return guessed or "application/octet-stream"


def list_dir(alloc_dir: Path, relative: str) -> list[dict[str, Any]]:
    target = resolve(alloc_dir, relative or "/")
    if not target.exists():
        raise FsError(404, "path", f"{relative!r}: no such file or directory")
    if not target.is_dir():
        raise FsError(400, "path", f"{relative!r} is a file, not a directory")
    root = alloc_dir.resolve()
    entries = sorted(p for p in target.iterdir() if not (target == root and p.name in HIDDEN))
    return [file_info(p, with_content_type=False) for p in entries]


def stat(alloc_dir: Path, relative: str) -> dict[str, Any]:
    target = resolve(alloc_dir, relative)
    if not target.exists():
        raise FsError(404, "path", f"{relative!r}: no such file or directory")
    info = file_info(target, with_content_type=True)
    named = PurePosixPath(relative).name
    if named and named not in (".", ".."):
        info["Name"] = named  # as os.Stat names it: the path asked for, even through a symlink
    return info


def read_at(alloc_dir: Path, tasks: Iterable[str], relative: str, offset: int, limit: int) -> bytes:
    """Up to `limit` bytes (0: to the end, at most MAX_READ) from `offset`; FsError 403 naming
    `path` inside a task's secrets/, 400 for a directory, 404 for a missing file."""
    target = resolve(alloc_dir, relative)
    root = alloc_dir.resolve()
    for task in tasks:
        secrets = root / task / "secrets"
        if target == secrets or secrets in target.parents:
            raise FsError(403, "path", f"{relative!r}: reading a task's secrets directory is prohibited")
    if not target.exists():
        raise FsError(404, "path", f"{relative!r}: no such file or directory")
    if target.is_dir():
        raise FsError(400, "path", f"{relative!r} is a directory")
    if not stat_mode.S_ISREG(target.stat().st_mode):  # a FIFO would hold the reader forever
        raise FsError(400, "path", f"{relative!r} is not a regular file")
    wanted = MAX_READ if limit <= 0 else min(limit, MAX_READ)
    with target.open("rb") as handle:
        handle.seek(offset)
        return handle.read(wanted)
