"""Every role waits for its database at start-up instead of exiting (issue 23): server, worker,
applier and leader started while PostgreSQL is down keep running, say so once, and start
working once it is back. On a Postgres of this test's own (the shared one must stay up)."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.db.engines import sqlalchemy_url
from tests.support.own_postgres import OwnPostgres, own_postgres
from tests.support.processes import CorralFactory, free_port, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance
WAITING = "database unavailable; waiting for it"


@pytest.fixture
def postgres(workdir: Path) -> Iterator[OwnPostgres]:
    with own_postgres(workdir) as pg:
        yield pg


def test_every_role_waits_for_the_database_at_start_up(corral: CorralFactory, postgres: OwnPostgres) -> None:
    postgres.stop()
    port = free_port()
    env = {"CORRAL_DATABASE_URL": postgres.url, "CORRAL_BIND": f"127.0.0.1:{port}", "CORRAL_POLL_INTERVAL_S": "0.2"}
    roles = {role: corral([role], env=env) for role in ("server", "worker", "applier", "leader")}
    assert wait_for(lambda: all(WAITING in p.output for p in roles.values()), 60), {
        role: p.output for role, p in roles.items()
    }
    time.sleep(3)  # a few retries later: still waiting, still saying it once
    for role, process in roles.items():
        assert process.process.poll() is None, f"{role} exited while the database was down:\n{process.output}"
        assert process.output.count(WAITING) == 1, process.output

    postgres.start()
    wait_healthy(f"http://127.0.0.1:{port}", roles["server"])
    assert httpx.get(f"http://127.0.0.1:{port}/v1/jobs", timeout=10).status_code == 200
    assert wait_for(lambda: all("database available" in p.output for p in roles.values()), 60)
    for role in ("worker", "applier", "leader"):
        roles[role].process.send_signal(signal.SIGTERM)
        assert roles[role].wait(30) == 0, roles[role].output


def test_a_role_stopped_while_waiting_for_the_database_exits_cleanly(corral: CorralFactory) -> None:
    # Nothing listens on that port: the refusal a stopped server gives, without making one.
    unreachable = sqlalchemy_url(f"postgresql://corral@127.0.0.1:{free_port()}/corral")
    worker = corral(["worker"], env={"CORRAL_DATABASE_URL": unreachable})
    assert wait_for(lambda: WAITING in worker.output, 60), worker.output
    worker.process.send_signal(signal.SIGTERM)
    assert worker.wait(30) == 0, worker.output
