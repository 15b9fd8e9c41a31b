"""corral: a Nomad-style cluster scheduler whose whole state lives in PostgreSQL.

Importing `app` imports nothing heavy: the API's factory lives in `app.api.factory` and
`from app import create_app` reaches it lazily, so the CLI does not pay for Flask."""

from __future__ import annotations

from typing import Any


def __getattr__(name: str) -> Any:
    if name == "create_app":
        from app.api.factory import create_app

        return create_app
    raise AttributeError(f"module 'app' has no attribute {name!r}")
