"""Reading GET /v1/event/stream from the Flask test client: NDJSON frames, one per line."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from flask.testing import FlaskClient

Frame = dict[str, Any]


def read_frames(
    client: FlaskClient,
    query: str = "",
    *,
    until: Callable[[list[Frame]], bool],
    headers: dict[str, str] | None = None,
    max_frames: int = 500,
) -> list[Frame]:
    """Frames (heartbeats included) from the start of a stream until `until(frames)` holds, or
    `max_frames` were read (the stream's heartbeats keep it moving when nothing happens)."""
    resp = client.get(f"/v1/event/stream?{query}", buffered=False, headers=headers or {})
    assert resp.status_code == 200, resp.get_data(as_text=True)
    frames: list[Frame] = []
    pending = b""
    try:
        for chunk in resp.iter_encoded():
            pending += chunk
            while b"\n" in pending:
                line, pending = pending.split(b"\n", 1)
                frames.append(json.loads(line))
            if until(frames) or len(frames) >= max_frames:
                break
    finally:
        resp.close()
    return frames


def events(frames: list[Frame]) -> list[dict[str, Any]]:
    return [e for f in frames for e in f.get("Events", [])]


def has(topic: str, kind: str, key: str | None = None) -> Callable[[list[Frame]], bool]:
    """Stop once an event of `topic` and type `kind` (and key) arrived."""

    def found(frames: list[Frame]) -> bool:
        return any(
            e["Topic"] == topic and e["Type"] == kind and (key is None or e["Key"] == key) for e in events(frames)
        )

    return found


def heartbeats(n: int) -> Callable[[list[Frame]], bool]:
    """Stop after `n` heartbeat frames: with a short heartbeat interval, a stream with nothing
    more to send reaches it quickly."""
    return lambda frames: sum(1 for f in frames if f == {}) >= n
