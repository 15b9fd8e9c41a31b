"""The event stream across a restart of a real `corral server`: events are rows committed with
their changes, so a client that resumes with ?index= after the server came back (or after
changes made while it was down) receives every event it had not seen, once and in order."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import text

from app.db.engines import make_engine, make_sessionmaker, transaction
from app.jobspec import normalize_job
from app.store.job.jobs import RegisterOptions, register_job
from tests.support.api import minimal_job
from tests.support.processes import Corral, CorralFactory, free_port, wait_healthy

pytestmark = pytest.mark.acceptance


def start(corral: CorralFactory, database_url: str, port: int) -> Corral:
    env = {
        "CORRAL_DATABASE_URL": database_url,
        "CORRAL_BIND": f"127.0.0.1:{port}",
        "CORRAL_EVENT_STREAM_HEARTBEAT_S": "0.5",
    }
    server = corral(["server"], env=env)
    wait_healthy(f"http://127.0.0.1:{port}", server)
    return server


def job_frames(base: str, index: int, wanted: int) -> list[dict[str, Any]]:
    """Frames with Job events from ?index=, until `wanted` of them arrived."""
    frames: list[dict[str, Any]] = []
    params = {"index": str(index), "topic": "Job"}
    with httpx.stream("GET", f"{base}/v1/event/stream", params=params, timeout=30) as resp:
        assert resp.status_code == 200
        for line in resp.iter_lines():
            frame = json.loads(line)
            if frame.get("Events"):
                frames.append(frame)
            if len(frames) >= wanted:
                break
    return frames


def test_resume_by_index_after_a_server_restart_loses_nothing(
    corral: CorralFactory, database_url: str, workdir: Path
) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server = start(corral, database_url, port)
    for i in range(3):
        assert httpx.put(f"{base}/v1/jobs", json={"Job": minimal_job(f"before-{i}")}, timeout=30).status_code == 200
    seen = job_frames(base, 0, 3)
    last = seen[-1]["Index"]

    server.kill_all()  # SIGKILL to the master and its workers: no clean shutdown
    engine = make_engine(database_url, "test")
    try:
        for i in range(2):  # changes while no API runs (as another server of the cluster would make)
            with transaction(make_sessionmaker(engine)) as session:
                register_job(session, normalize_job(minimal_job(f"down-{i}")), RegisterOptions())
        with engine.connect() as conn:
            committed = [
                int(i) for i in conn.execute(text("SELECT modify_index FROM jobs ORDER BY modify_index")).scalars()
            ]
    finally:
        engine.dispose()

    start(corral, database_url, port)
    assert httpx.put(f"{base}/v1/jobs", json={"Job": minimal_job("after")}, timeout=30).status_code == 200
    resumed = job_frames(base, last + 1, 3)
    keys = [e["Key"] for f in resumed for e in f["Events"]]
    assert keys == ["down-0", "down-1", "after"]
    assert [f["Index"] for f in seen + resumed] == [*committed, resumed[-1]["Index"]]
