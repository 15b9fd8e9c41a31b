"""The event stream never skips an event: a reader streams while writers commit, and every
committed change reaches it once, in index order, even when a writer with a lower index is
still open while a later writer is trying to commit."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import psycopg
import pytest
from flask.testing import FlaskClient

from app import create_app
from app.db.engines import libpq_url
from app.settings.config import Settings
from tests.support.api import minimal_job, register
from tests.support.events import Frame, events, read_frames
from tests.support.processes import wait_for

pytestmark = pytest.mark.concurrency
Conn = psycopg.Connection[tuple[object, ...]]


@pytest.fixture
def client(database_url: str) -> Iterator[FlaskClient]:
    settings = Settings(database_url=database_url, event_stream_heartbeat_s=0.2, poll_interval_s=0.1)
    app = create_app(settings, database_url)
    yield app.test_client()
    app.extensions["corral"].close()


class Reader:
    """A stream read in a thread until stopped; `frames` grows as they arrive."""

    def __init__(self, client: FlaskClient, query: str) -> None:
        self.frames: list[Frame] = []
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._read, args=(client, query), daemon=True)
        self.thread.start()

    def _read(self, client: FlaskClient, query: str) -> None:
        def collected(frames: list[Frame]) -> bool:
            self.frames = list(frames)
            return self.stop.is_set()

        read_frames(client, query, until=collected, max_frames=1_000_000)

    def keys(self) -> list[str]:
        return [e["Key"] for e in events(self.frames)]

    def indexes(self) -> list[int]:
        return [f["Index"] for f in self.frames if f.get("Events")]

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=30)
        assert not self.thread.is_alive()


def take_index_and_touch(conn: Conn, job_id: str) -> int:
    """What every writer does: log its own index (its xid plus the offset, no lock) against the
    table and write the row with it."""
    row = conn.execute(
        "INSERT INTO state_index (name, value) VALUES ('jobs', state_index_own()) RETURNING value"
    ).fetchone()
    assert row is not None
    index = int(str(row[0]))
    conn.execute("UPDATE jobs SET modify_index = %s WHERE id = %s", (index, job_id))
    return index


def test_an_open_lower_index_holds_back_the_stream_until_it_commits(client: FlaskClient, database_url: str) -> None:
    register(client, minimal_job("a"))
    start = register(client, minimal_job("b"))["Index"] + 1
    reader = Reader(client, f"index={start}&topic=Job")
    first = psycopg.connect(libpq_url(database_url))
    second = psycopg.connect(libpq_url(database_url))
    try:
        low = take_index_and_touch(first, "a")  # open: not committed yet
        high: dict[str, Any] = {}

        def later_writer() -> None:
            high["index"] = take_index_and_touch(second, "b")
            second.commit()

        writer = threading.Thread(target=later_writer)
        writer.start()
        assert wait_for(lambda: sum(1 for f in reader.frames if f == {}) >= 5, 30)  # the stream is idle
        assert reader.keys() == []  # nothing past the open index was delivered
        first.commit()
        writer.join(timeout=30)
        assert not writer.is_alive()
        assert wait_for(lambda: len(reader.keys()) == 2, 30), reader.frames
        assert reader.indexes() == [low, high["index"]] and low < high["index"]
        assert reader.keys() == ["a", "b"]
    finally:
        reader.close()
        first.close()
        second.close()


def test_a_reader_sees_every_commit_of_many_writers_once_and_in_order(client: FlaskClient, pg: Conn) -> None:
    reader = Reader(client, "topic=Job")
    try:
        with ThreadPoolExecutor(max_workers=6) as pool:
            answers = list(pool.map(lambda i: register(client, minimal_job(f"job-{i}")), range(60)))
        committed = sorted(a["Index"] for a in answers)
        assert wait_for(lambda: len(reader.indexes()) >= len(committed), 60), reader.frames
        assert reader.indexes() == committed  # every index once, ascending: none skipped
        assert sorted(reader.keys()) == sorted(f"job-{i}" for i in range(60))
    finally:
        reader.close()
