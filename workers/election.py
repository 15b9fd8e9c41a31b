"""Standing for a single-holder role (the applier, the leader): win the advisory lock, serve
while holding it, and when the term or the database is lost, drop the role and stand again.
The role never dies silently: a bug is logged once with its traceback and backed off from."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable

import psycopg
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError

from app.db.leadership import Leadership
from workers.loops import Backoff, Streak

STAND_AGAIN_S = 1.0  # how often a stand-by tries for the lock


def stand_for_election(
    engine: Engine,
    role: str,
    stop: threading.Event,
    serve: Callable[[Leadership], None],
    lost: tuple[type[BaseException], ...] = (),
) -> None:
    """Until `stop`: hold `role` and `serve` it (serve returns or raises when the term ends).
    `lost` names the role's own exceptions meaning "the term is over" (beside the database's)."""
    ending: tuple[type[BaseException], ...] = (DBAPIError, psycopg.Error, *lost)
    backoff = Backoff(cap=5.0)
    streak = Streak(f"the {role} role")
    while not stop.is_set():
        lead: Leadership | None = None
        try:
            lead = Leadership(engine, role)
            if lead.try_acquire():
                backoff.reset()
                streak.succeeded()
                serve(lead)
            else:
                streak.succeeded()
                stop.wait(STAND_AGAIN_S)
        except ending as err:
            # Lost the term or the database: drop the role, then stand for election again.
            streak.failed(err)
            stop.wait(backoff.next())
        except Exception as err:  # a bug: log it once, back off, stand again (never die silently)
            streak.failed(err, traceback=True)
            stop.wait(backoff.next())
        finally:
            if lead is not None:
                with contextlib.suppress(Exception):
                    lead.close()
