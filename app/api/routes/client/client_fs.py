"""Nomad's client filesystem routes (/v1/client/fs/...): logs, ls, stat, cat, readat and stream
of an allocation's directory, proxied to the client that runs it (app/api/http/client_proxy.py).

Nothing a node sends is served as it came: listings and stats are parsed and encoded again as
JSON, files (cat, readat) are served as application/octet-stream attachments, plain logs as
text/plain that no browser sniffs. Files and logs are read from the client in pieces of at most
link_max_answer_bytes, so a big file needs no big answer.

Logs and stream answer Nomad's StreamFrames (Data base64, Offset, File; `{}` heartbeats) unless
plain=true. Following (follow=true) is done here: the server asks the client for what follows
the last offset every FOLLOW_POLL_S, in a greenlet holding no database connection, until the
task is dead and its log drained, or the caller goes away."""

from __future__ import annotations

import base64
import json
import posixpath
import time
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from urllib.parse import quote

import structlog
from flask import Blueprint, Response, stream_with_context

from app.acl import client_link as link
from app.api.http.client_proxy import (
    Limits,
    Relayed,
    Target,
    Unreachable,
    forward,
    parsed_json,
    relay_failure,
    relay_json,
    target_of_alloc,
)
from app.api.http.context import state
from app.api.http.params import arg, bool_arg, integer_arg, uuid_value
from app.store import allocs as alloc_store
from app.values.errors import InvalidInput, NotFound

log = structlog.get_logger(__name__)
bp = Blueprint("client_fs", __name__)
FOLLOW_POLL_S = 0.5
FINISHED_CHECK_S = 2.0  # how often an idle follow asks the database whether the writer is gone
HEARTBEAT_S = 10.0  # Nomad's stream heartbeat: an empty frame when nothing else was sent
STREAM_TYPE = "application/json"
TERMINAL = ("complete", "failed", "lost")


def frame(data: bytes, end_offset: int, file: str) -> bytes:
    """Nomad's StreamFrame (empty fields left out, as its omitempty does): Offset is where the
    reader resumes, the end of Data in the file."""
    return json.dumps({"Offset": end_offset, "Data": base64.b64encode(data).decode(), "File": file}).encode()


def _required_path() -> str:
    path = arg("path")
    if not path:
        raise InvalidInput.of("path", "must provide a file name")
    return path


def _origin() -> str:
    origin = arg("origin") or "start"
    if origin not in ("start", "end"):
        raise InvalidInput.of("origin", f"must be 'start' or 'end', got {origin!r}")
    return origin


def _client_path(kind: str, alloc_id: uuid.UUID) -> str:
    return f"/v1/client/fs/{kind}/{alloc_id}"


def _fetch(target: Target, kind: str, alloc_id: uuid.UUID, query: dict[str, str]) -> Relayed:
    """A client answer, or the caller's problem raised as Unreachable (a client refusal too)."""
    answer = forward(target, "GET", _client_path(kind, alloc_id), query)
    if answer.status != 200:
        raise Unreachable(relay_failure(answer))
    return answer


def _unreachable(err: Unreachable) -> Response:
    return err.response


bp.register_error_handler(Unreachable, _unreachable)


@bp.get("/client/fs/ls/<alloc_id>")
def ls(alloc_id: str) -> Response:
    key = uuid_value(alloc_id, "AllocID")
    query = {"path": arg("path") or "/"}
    target = target_of_alloc(key)
    return relay_json(forward(target, "GET", _client_path("ls", key), query), target)


@bp.get("/client/fs/stat/<alloc_id>")
def stat(alloc_id: str) -> Response:
    key = uuid_value(alloc_id, "AllocID")
    query = {"path": _required_path()}
    target = target_of_alloc(key)
    return relay_json(forward(target, "GET", _client_path("stat", key), query), target)


@bp.get("/client/fs/cat/<alloc_id>")
def cat(alloc_id: str) -> Response:
    key = uuid_value(alloc_id, "AllocID")
    source = Source(target_of_alloc(key), key, _required_path(), None)
    return _file(source, source.pieces(0, 0))


@bp.get("/client/fs/readat/<alloc_id>")
def readat(alloc_id: str) -> Response:
    key = uuid_value(alloc_id, "AllocID")
    path = _required_path()
    offset = integer_arg("offset")
    if offset is None:
        raise InvalidInput.of("offset", "is required: where to start reading")
    source = Source(target_of_alloc(key), key, path, None)
    return _file(source, source.pieces(offset, integer_arg("limit") or 0))


def _file(source: Source, pieces: Iterator[bytes]) -> Response:
    """A file's bytes as untrusted content: a download, never sniffed or rendered by a browser.
    The first piece is read before answering, so a refusal is still a problem."""
    first = next(pieces, b"")

    def body() -> Iterator[bytes]:
        yield first
        yield from pieces

    response = Response(stream_with_context(body()), status=200, content_type="application/octet-stream")
    name = posixpath.basename(source.path.rstrip("/")) or "file"
    response.headers["Content-Disposition"] = _attachment(name)
    return _untrusted(response)


def _attachment(name: str) -> str:
    """`attachment` with the file's name, quoted safely (RFC 6266's filename*)."""
    return f"attachment; filename*=UTF-8''{quote(name, safe='')}"


def _untrusted(response: Response) -> Response:
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Content-Security-Policy"] = "default-src 'none'; style-src 'unsafe-inline'; sandbox"
    return response


@bp.get("/client/fs/logs/<alloc_id>")
def logs(alloc_id: str) -> Response:
    """A task's stdout or stderr: frames (or plain=true bytes) from the offset, followed with
    follow=true until the task is dead."""
    key = uuid_value(alloc_id, "AllocID")
    task = arg("task")
    if not task:
        raise InvalidInput.of("task", "is required: the task whose logs to read")
    if any(c in task for c in "/\\\x00") or task in (".", ".."):
        raise InvalidInput.of("task", f"{task!r} is not a task name")
    kind = arg("type") or "stdout"
    if kind not in ("stdout", "stderr"):
        raise InvalidInput.of("type", f"must be 'stdout' or 'stderr', got {kind!r}")
    logs = LogFiles(target_of_alloc(key), key, task, kind)
    return _stream_logs(logs, _origin(), integer_arg("offset") or 0, bool_arg("plain"), bool_arg("follow"))


@bp.get("/client/fs/stream/<alloc_id>")
def stream(alloc_id: str) -> Response:
    """Any file of the allocation as frames, followed by default (Nomad's follow=true)."""
    key = uuid_value(alloc_id, "AllocID")
    path = _required_path()
    follow = bool_arg("follow") if arg("follow") is not None else True
    source = Source(target_of_alloc(key), key, path, None)
    return _stream(source, _origin(), integer_arg("offset") or 0, False, follow)


@dataclass(frozen=True)
class Source:
    """A file followed on a client; `task` is whose death ends a follow (None: the allocation's)."""

    target: Target
    alloc_id: uuid.UUID
    path: str
    task: str | None

    def read(self, offset: int, missing_is_empty: bool = False, limit: int = 0) -> bytes:
        """The bytes from offset on, at most one piece (and at most `limit` when set); a file not
        there yet reads empty when `missing_is_empty` (a follow waits for it, as Nomad's does),
        else its 404 is the caller's answer."""
        wanted = min(limit, piece_bytes()) if limit > 0 else piece_bytes()
        query = {"path": self.path, "offset": str(offset), "limit": str(wanted)}
        try:
            return _fetch(self.target, "readat", self.alloc_id, query).body
        except Unreachable as err:
            if missing_is_empty and _file_missing(err):
                return b""
            raise

    def pieces(self, offset: int, limit: int) -> Iterator[bytes]:
        """The file from offset, `limit` bytes (0: to its end), piece by piece. The first piece
        raises as read() does; a failure after it ends the pieces early (the answer has begun)."""
        piece = self.read(offset, limit=limit)
        yield piece
        got = len(piece)
        while len(piece) == piece_bytes() and (limit <= 0 or got < limit):
            try:
                piece = self.read(offset + got, limit=limit - got if limit > 0 else 0)
            except Unreachable:
                log.warning("a file read from a client ended early", node_id=str(self.target.node_id), path=self.path)
                return
            if piece:
                yield piece
            got += len(piece)

    def size(self, missing_is_empty: bool = False) -> int:
        try:
            answer = _fetch(self.target, "stat", self.alloc_id, {"path": self.path})
        except Unreachable as err:
            if missing_is_empty and _file_missing(err):
                return 0
            raise
        info = parsed_json(answer, self.target)
        size = info.get("Size") if isinstance(info, dict) else None
        return size if isinstance(size, int) and size >= 0 else 0

    def finished(self) -> bool:
        """The writer is gone: the task is dead (or the allocation terminal), nothing more comes."""
        with state().reads() as session, session.begin():
            try:
                alloc = alloc_store.get_allocation(session, self.alloc_id)
            except NotFound:
                return True  # collected meanwhile
            if alloc.client_status in TERMINAL:
                return True
            if self.task is None:
                return False
            task_state = (alloc.task_states or {}).get(self.task) or {}
            return bool(task_state.get("State") == "dead")


def _file_missing(err: Unreachable) -> bool:
    """The client's 404 names `path`: the file is not there (yet), the allocation is."""
    body = err.response.get_json(silent=True) if err.response.status_code == 404 else None
    errors = body.get("errors") if isinstance(body, dict) else None
    return bool(errors) and isinstance(errors, list) and errors[0].get("field") == "path"


def piece_bytes() -> int:
    """The most one read asks of a client: within the servers' cap on an answer and what a
    client answers at once, so a piece this long means more may follow."""
    return min(Limits.of_settings().max_bytes, link.MAX_READ_BYTES)


def _stream(source: Source, origin: str, offset: int, plain: bool, follow: bool) -> Response:
    """The first read answers now (errors as problems); the rest goes on in a generator."""
    start = offset if origin == "start" else max(0, source.size(follow) - offset)
    first = source.read(start, follow)
    content_type = "text/plain; charset=utf-8" if plain else STREAM_TYPE
    body = _follow(source, start, first, plain) if follow else _drain(source, start, first, plain)
    response = Response(stream_with_context(body), status=200, content_type=content_type)
    return _untrusted(response) if plain else response


def _drain(source: Source, offset: int, data: bytes, plain: bool) -> Iterator[bytes]:
    """What the file holds now, from offset: piece after piece until a short one."""
    while data:
        offset += len(data)
        yield data if plain else frame(data, offset, source.path)
        if len(data) < piece_bytes():
            return
        data = _read_quietly(source, offset) or b""


def _follow(source: Source, offset: int, data: bytes | None, plain: bool) -> Iterator[bytes]:
    quiet_since = checked = time.monotonic()
    if not data:
        yield b"" if plain else b"{}"  # the answer's headers go now, not with the first new bytes
    while data is not None:  # None: the client stopped answering mid-stream; the caller reconnects
        if data:
            offset += len(data)
            yield data if plain else frame(data, offset, source.path)
            quiet_since = time.monotonic()
        elif time.monotonic() - checked >= FINISHED_CHECK_S:
            checked = time.monotonic()
            if source.finished():
                data = _read_quietly(source, offset)
                if not data:
                    return  # drained after the writer died
                continue
        elif not plain and time.monotonic() - quiet_since >= HEARTBEAT_S:
            yield b"{}"
            quiet_since = time.monotonic()
        if not data or len(data) < piece_bytes():
            time.sleep(FOLLOW_POLL_S)  # a full piece: more is waiting already
        data = _read_quietly(source, offset)


def _read_quietly(source: Source, offset: int) -> bytes | None:
    try:
        return source.read(offset, missing_is_empty=True)
    except Unreachable:
        return None


@dataclass(frozen=True)
class LogFiles:
    """A task's stdout or stderr as its logmon leaves it: `<task>.<kind>.N` files in alloc/logs,
    the oldest kept first. Offsets are within one file, as in Nomad's frames (File says which)."""

    target: Target
    alloc_id: uuid.UUID
    task: str
    kind: str

    def indexes(self) -> list[tuple[int, int]]:
        """(N, size) of each file there now, oldest first; [(0, 0)] before the first exists."""
        try:
            answer = _fetch(self.target, "ls", self.alloc_id, {"path": "alloc/logs"})
        except Unreachable as err:
            if _file_missing(err):
                return [(0, 0)]
            raise
        listing = parsed_json(answer, self.target)
        prefix = f"{self.task}.{self.kind}."
        found = []
        for entry in listing if isinstance(listing, list) else []:
            name, size = (entry.get("Name"), entry.get("Size")) if isinstance(entry, dict) else (None, None)
            if isinstance(name, str) and name.startswith(prefix) and name[len(prefix) :].isdigit():
                found.append((int(name[len(prefix) :]), size if isinstance(size, int) and size >= 0 else 0))
        return sorted(found) or [(0, 0)]

    def source(self, index: int) -> Source:
        return Source(self.target, self.alloc_id, f"alloc/logs/{self.task}.{self.kind}.{index}", self.task)

    def start(self, origin: str, offset: int) -> tuple[int, int]:
        """The file and the offset in it to read from: `offset` bytes after the oldest file's
        start, or before the newest file's end, across the files (Nomad's logs origin)."""
        files = self.indexes()
        if origin == "start":
            for index, size in files:
                if offset < size or index == files[-1][0]:
                    return index, min(offset, size)
                offset -= size
        for index, size in reversed(files):
            if offset <= size:
                return index, size - offset
            offset -= size
        return files[0][0], 0

    def next_after(self, index: int) -> int | None:
        later = [i for i, _ in self.indexes() if i > index]
        return min(later) if later else None


def _stream_logs(logs: LogFiles, origin: str, offset: int, plain: bool, follow: bool) -> Response:
    index, start = logs.start(origin, offset)
    first = logs.source(index).read(start, follow)  # not following, a log never written is a 404
    content_type = "text/plain; charset=utf-8" if plain else STREAM_TYPE
    body = _log_frames(logs, index, start, first, plain, follow)
    response = Response(stream_with_context(body), status=200, content_type=content_type)
    return _untrusted(response) if plain else response


def _log_frames(logs: LogFiles, index: int, offset: int, first: bytes, plain: bool, follow: bool) -> Iterator[bytes]:
    """Each file's rest in turn, moving to the next file once one is read to its end; following,
    until the task is dead and the newest file drained."""
    while True:
        source = logs.source(index)
        if follow:
            moved = yield from _follow_until_rotated(logs, source, index, offset, first, plain)
        else:
            yield from _drain(source, offset, first, plain)
            moved = logs.next_after(index)
        if moved is None:
            return
        index, offset = moved, 0
        first = _read_quietly(logs.source(index), 0) or b""


def _follow_until_rotated(
    logs: LogFiles, source: Source, index: int, offset: int, data: bytes | None, plain: bool
) -> Generator[bytes, None, int | None]:
    """_follow for one file; returns the next file's index once a later file exists and this
    one is read to its end (None when the task is done)."""
    quiet_since = checked = time.monotonic()
    if not data:
        yield b"" if plain else b"{}"
    while data is not None:
        if data:
            offset += len(data)
            yield data if plain else frame(data, offset, source.path)
            quiet_since = time.monotonic()
        elif time.monotonic() - checked >= FOLLOW_POLL_S:
            checked = time.monotonic()
            later = logs.next_after(index)
            if later is not None:
                rest = _read_quietly(source, offset)
                if not rest:
                    return later
                data = rest
                continue
            if source.finished():
                data = _read_quietly(source, offset)
                if not data:
                    return None
                continue
        elif not plain and time.monotonic() - quiet_since >= HEARTBEAT_S:
            yield b"{}"
            quiet_since = time.monotonic()
        if not data or len(data) < piece_bytes():
            time.sleep(FOLLOW_POLL_S)
        data = _read_quietly(source, offset)
    return None
