"""The leader's event retention: events older than event_retention_s are deleted, oldest first,
in batches of at most gc_batch_size rows (the events table has no readers to wait for: the
stream reads rows once, and a stream resuming from a deleted index starts at the oldest kept)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy.orm import Session

from app.settings.config import Settings
from app.store.events import delete_before

# Batches per tick: enough to keep up with thousands of changes a second at one tick a minute,
# bounded so one tick never holds the leader's only duty thread for long.
MAX_BATCHES = 50


def collector(settings: Settings) -> Callable[[Session], int]:
    """The duty: how many events it deleted."""
    retention = timedelta(seconds=settings.event_retention_s)
    batch = settings.gc_batch_size * 10

    def collect(session: Session) -> int:
        cutoff = datetime.now(UTC) - retention
        deleted = 0
        for _ in range(MAX_BATCHES):
            gone = delete_before(session, cutoff, batch)
            deleted += gone
            if gone < batch:
                break
        return deleted

    return collect
