"""Per-application state (engines, session factories, the index watcher) and responses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from flask import Response, current_app, jsonify
from sqlalchemy import Engine
from sqlalchemy.orm import Session, sessionmaker

from app.api.blocking import IndexWatcher, blocking_read
from app.api.params import blocking_params
from app.config import Settings

T = TypeVar("T")


@dataclass
class ApiState:
    settings: Settings
    database_url: str
    engine: Engine
    writes: sessionmaker[Session]
    reads: sessionmaker[Session]
    watcher: IndexWatcher


def state() -> ApiState:
    found: ApiState = current_app.extensions["corral"]
    return found


def respond(body: Any, index: int, status: int = 200) -> Response:
    response = jsonify(body)
    response.status_code = status
    response.headers["X-Nomad-Index"] = str(index)
    response.headers["X-Nomad-KnownLeader"] = "true"
    response.headers["X-Nomad-LastContact"] = "0"
    return response


def read(tables: list[str], fn: Callable[[Session], T]) -> tuple[T, int]:
    """A blocking-capable read: honours ?index= and ?wait= on every read endpoint."""
    current = state()
    params = blocking_params(current.settings.max_blocking_wait_s)
    return blocking_read(current.reads, current.watcher, tables, params, fn)


def write(fn: Callable[[Session], T]) -> T:
    """One write transaction: everything in fn commits together or not at all."""
    with state().writes() as session, session.begin():
        return fn(session)
