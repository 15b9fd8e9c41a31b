"""The JSON frames of Nomad's `alloc exec` WebSocket (api/allocations_exec.go): what the caller
sends (stdin bytes, stdin close, terminal size, or `{}` as a heartbeat) and what it receives
(stdout/stderr bytes, their close, then `exited` with the exit code). Bytes travel base64, as
Go encodes a []byte. Pure."""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass

from app.wire.json import JsonObject, JsonValue

MAX_TTY_SIDE = 10_000


class FrameError(ValueError):
    """A frame that is not one of Nomad's exec input frames."""


@dataclass(frozen=True)
class Input:
    """One frame from the caller; every field empty means a heartbeat."""

    stdin: bytes = b""
    stdin_close: bool = False
    size: tuple[int, int] | None = None  # (height, width)


def _bytes(value: JsonValue | None) -> bytes:
    if value is None or value == "":
        return b""
    if not isinstance(value, str):
        raise FrameError("stdin.data must be a base64 string")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise FrameError("stdin.data is not valid base64") from None


def _side(size: JsonObject, name: str) -> int:
    value = size.get(name, 0)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TTY_SIDE:
        raise FrameError(f"tty_size.{name} must be an integer from 0 to {MAX_TTY_SIDE}")
    return value


def _json_object(text: str) -> JsonObject:
    """Every frame, either way, is one JSON object."""
    try:
        frame = json.loads(text)
    except ValueError:
        raise FrameError("a frame must be a JSON object") from None
    if not isinstance(frame, dict):
        raise FrameError("a frame must be a JSON object")
    found: JsonObject = frame
    return found


def parse_input(text: str) -> Input:
    frame = _json_object(text)
    stdin, size = frame.get("stdin"), frame.get("tty_size")
    if stdin is not None:
        if not isinstance(stdin, dict):
            raise FrameError("stdin must be an object")
        return Input(stdin=_bytes(stdin.get("data")), stdin_close=stdin.get("close") is True)
    if size is not None:
        if not isinstance(size, dict):
            raise FrameError("tty_size must be an object")
        return Input(size=(_side(size, "height"), _side(size, "width")))
    return Input()


def _data(stream: str, data: bytes) -> str:
    """A stream's bytes (stdin one way, stdout or stderr the other), base64 as Go sends []byte."""
    return json.dumps({stream: {"data": base64.b64encode(data).decode()}})


def _close(stream: str) -> str:
    return json.dumps({stream: {"close": True}})


def stdin(data: bytes) -> str:
    return _data("stdin", data)


def stdin_close() -> str:
    return _close("stdin")


def tty_size(height: int, width: int) -> str:
    return json.dumps({"tty_size": {"height": height, "width": width}})


def output(stream: str, data: bytes) -> str:
    """`stream` is stdout or stderr."""
    return _data(stream, data)


def output_close(stream: str) -> str:
    return _close(stream)


def exited(code: int) -> str:
    return json.dumps({"exited": True, "result": {"exit_code": code}})


@dataclass(frozen=True)
class Output:
    """One frame to the caller, decoded."""

    stream: str = ""  # stdout, stderr, or "" for none
    data: bytes = b""
    close: bool = False
    exit_code: int | None = None  # set on the `exited` frame


def parse_output(text: str) -> Output:
    frame = _json_object(text)
    if frame.get("exited"):
        result = frame.get("result") or {}
        code = result.get("exit_code", 0) if isinstance(result, dict) else 0
        return Output(exit_code=code if isinstance(code, int) else -1)
    for stream in ("stdout", "stderr"):
        part = frame.get(stream)
        if isinstance(part, dict):
            return Output(stream=stream, data=_bytes(part.get("data")), close=part.get("close") is True)
    return Output()
