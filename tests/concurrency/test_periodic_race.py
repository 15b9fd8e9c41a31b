"""Two leaders' periodic duties racing on real connections: both read the same due launches
before either writes, yet every scheduled time is launched exactly once, with one evaluation."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.engines import libpq_url
from app.db.state_index import next_index
from app.jobspec import normalize_job
from app.leader import periodic_launch
from app.store.job.jobs import RegisterOptions, register_job

pytestmark = pytest.mark.concurrency

PARENTS, ROUNDS, LEADERS = 3, 12, 2
T0 = datetime(2030, 1, 1, tzinfo=UTC)


def test_racing_leaders_never_launch_the_same_time_twice(
    engine: Engine, database_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    for n in range(PARENTS):
        spec = normalize_job(
            {
                "ID": f"tick{n}",
                "Type": "batch",
                "Periodic": {"Spec": "* * * * * * *"},  # every second (7 fields: second first, year last)
                "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}],
            }
        )
        with Session(engine) as session, session.begin():
            register_job(session, spec, RegisterOptions())
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        pg.execute("UPDATE periodic_launches SET launch_time = %s", (T0,))

    # Both leaders have read what is due before either takes its first write: the database,
    # not timing, must keep the second from launching the same times.
    barrier = threading.Barrier(LEADERS, timeout=30)

    def next_index_after_both_read(session: Session, tables: Any) -> int:
        barrier.wait()
        return next_index(session, tables)

    monkeypatch.setattr(periodic_launch, "next_index", next_index_after_both_read)

    def leader(_: int) -> list[int]:
        launched = []
        for r in range(1, ROUNDS + 1):
            with Session(engine) as session, session.begin():
                launched.append(periodic_launch.launch_due(session, T0 + timedelta(seconds=r, milliseconds=200)))
        return launched

    with ThreadPoolExecutor(LEADERS) as pool:
        results = list(pool.map(leader, range(LEADERS)))

    # Each round launches every parent exactly once between the two leaders.
    assert [sum(per_round) for per_round in zip(*results, strict=True)] == [PARENTS] * ROUNDS
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        rows = pg.execute(
            "SELECT j.parent_id, count(DISTINCT j.id), count(e.id) FROM jobs j "
            "LEFT JOIN evaluations e ON e.namespace = j.namespace AND e.job_id = j.id "
            "WHERE j.parent_id IS NOT NULL GROUP BY j.parent_id ORDER BY j.parent_id"
        ).fetchall()
        assert rows == [(f"tick{n}", ROUNDS, ROUNDS) for n in range(PARENTS)]
        expected = {
            f"tick{n}/periodic-{int((T0 + timedelta(seconds=r)).timestamp())}"
            for n in range(PARENTS)
            for r in range(1, ROUNDS + 1)
        }
        found = {str(i) for (i,) in pg.execute("SELECT id FROM jobs WHERE parent_id IS NOT NULL")}
        assert found == expected
        last = pg.execute("SELECT DISTINCT launch_time FROM periodic_launches").fetchall()
        assert last == [(T0 + timedelta(seconds=ROUNDS),)]
