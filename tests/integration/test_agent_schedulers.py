"""/v1/agent/schedulers and /v1/agent/schedulers/config: a worker process publishes each of its
scheduling loops, any API server lists the live ones in Nomad's shapes, and the loops leave the
list when the process stops; the configuration is not changed through the API (a 501 names the
`corral worker` options)."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine

from app.db.engines import make_sessionmaker, transaction
from app.settings.config import Settings
from app.store import scheduler_workers
from tests.support.api import json_body
from tests.support.processes import wait_for
from tests.support.rows import Conn, scalar
from workers.worker import run_worker

pytestmark = pytest.mark.integration


def test_a_worker_processes_loops_are_listed_while_it_runs(client: FlaskClient, database_url: str, pg: Conn) -> None:
    settings = Settings(database_url=database_url, poll_interval_s=0.1, num_schedulers=2)
    stop = threading.Event()
    thread = threading.Thread(target=run_worker, args=(settings, database_url, ("service", "batch"), stop))
    thread.start()
    try:
        assert wait_for(lambda: scalar(pg, "SELECT count(*) FROM scheduler_workers") == 2, 30)
        answer = client.get("/v1/agent/schedulers")
        assert answer.status_code == 200
        body = json_body(answer)
        assert set(body) == {"ServerID", "Schedulers"} and body["ServerID"].endswith(".global")
        loops = body["Schedulers"]
        assert len(loops) == 2 and len({loop["ID"] for loop in loops}) == 2
        for loop in loops:
            assert set(loop) == {"ID", "EnabledSchedulers", "Started", "Status", "WorkloadStatus"}
            assert loop["EnabledSchedulers"] == ["service", "batch"]
            assert loop["Status"] in ("Starting", "Started")
            assert loop["WorkloadStatus"] in ("Starting", "WaitingToDequeue", "Scheduling")
            started = datetime.fromisoformat(loop["Started"])
            assert started.tzinfo is not None and abs(datetime.now(UTC) - started) < timedelta(minutes=5)
        config = json_body(client.get("/v1/agent/schedulers/config"))
        assert config == {"ServerID": body["ServerID"], "NumSchedulers": 2, "EnabledSchedulers": ["service", "batch"]}
    finally:
        stop.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert scalar(pg, "SELECT count(*) FROM scheduler_workers") == 0  # withdrawn on the way out
    assert json_body(client.get("/v1/agent/schedulers"))["Schedulers"] == []
    assert json_body(client.get("/v1/agent/schedulers/config"))["NumSchedulers"] == 0


def test_silent_loops_leave_the_list_and_are_forgotten(client: FlaskClient, engine: Engine, pg: Conn) -> None:
    sessions = make_sessionmaker(engine)
    now = datetime.now(UTC)
    loop = scheduler_workers.LoopState("h:1:aaaaaa", ("system",), now, "Started", "WaitingToDequeue")
    with transaction(sessions) as session:
        scheduler_workers.publish(session, "worker:h:1:0", [loop], now - scheduler_workers.LIVE_TTL * 2)
    assert json_body(client.get("/v1/agent/schedulers"))["Schedulers"] == []  # silent too long: not live
    fresh = scheduler_workers.LoopState("h:2:bbbbbb", ("_core",), now, "Started", "Scheduling")
    with transaction(sessions) as session:
        scheduler_workers.publish(session, "worker:h:2:0", [fresh], now + scheduler_workers.FORGET_AFTER * 2)
    assert scalar(pg, "SELECT array_agg(id) FROM scheduler_workers") == ["h:2:bbbbbb"]


def test_the_configuration_is_changed_by_starting_workers(client: FlaskClient) -> None:
    for method in ("PUT", "POST"):
        answer = client.open("/v1/agent/schedulers/config", method=method, json={"NumSchedulers": 4})
        assert answer.status_code == 501
        text = answer.get_data(as_text=True)
        assert "corral worker" in text and "--num-schedulers" in text and "--schedulers" in text
