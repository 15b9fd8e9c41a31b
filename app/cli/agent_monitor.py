"""`corral monitor`: Nomad's `nomad monitor`, the answering server's log lines as they are
written, at the level asked (/v1/agent/monitor), until Ctrl-C."""

from __future__ import annotations

import base64
import json

import click

from app.cli.support import http

LEVELS = ("trace", "debug", "info", "warn", "error")


@click.command("monitor")
@click.option(
    "-log-level",
    "--log-level",
    "log_level",
    default="info",
    type=click.Choice(LEVELS, case_sensitive=False),
    help="Lowest level of the lines to stream.",
)
@click.option("-log-json", "--log-json", "log_json", is_flag=True, help="Stream the lines as JSON objects.")
@click.option("-json", "as_json", is_flag=True, hidden=True, help="Nomad's older spelling of -log-json.")
def monitor(log_level: str, log_json: bool, as_json: bool) -> None:
    """Stream the server's log lines (Ctrl-C stops)."""
    params: dict[str, str | bool] = {"log_level": log_level.lower(), "log_json": log_json or as_json}
    decoder = FrameDecoder()
    try:
        for chunk in http.stream_text("/v1/agent/monitor", params):
            for text in decoder.feed(chunk):
                click.echo(text, nl=False)
    except KeyboardInterrupt:
        return


class FrameDecoder:
    """Nomad's monitor frames, {"Data": base64} objects back to back (heartbeats are {}), split
    across chunks anywhere; yields the text of each frame as it completes."""

    def __init__(self) -> None:
        self._buffer = ""
        self._decoder = json.JSONDecoder()

    def feed(self, chunk: bytes) -> list[str]:
        self._buffer += chunk.decode(errors="replace")
        texts: list[str] = []
        while self._buffer.lstrip():
            self._buffer = self._buffer.lstrip()
            try:
                frame, end = self._decoder.raw_decode(self._buffer)
            except json.JSONDecodeError:
                break  # the rest of the frame is still on its way
            self._buffer = self._buffer[end:]
            data = frame.get("Data") if isinstance(frame, dict) else None
            if isinstance(data, str) and data:
                texts.append(base64.b64decode(data).decode(errors="replace"))
        return texts
