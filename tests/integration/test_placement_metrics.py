"""A job through the pipeline (a real worker, the applier): every allocation it placed carries
its placement metrics, served by /v1/allocation/:id as Nomad's AllocMetric."""

from __future__ import annotations

import time

import psycopg
import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.pipeline.plan_apply.applier import apply_next
from app.settings.config import Settings
from tests.support.pipeline import claim, handling, register_mock_job
from tests.support.rows import insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
NOMAD_KEYS = {
    *("NodesEvaluated", "NodesFiltered", "NodesInPool", "NodesAvailable", "ClassFiltered", "ConstraintFiltered"),
    *("NodesExhausted", "ClassExhausted", "DimensionExhausted", "QuotaExhausted", "ResourcesExhausted"),
    *("Scores", "ScoreMetaData", "AllocationTime", "CoalescedFailures"),
}


def schedule(engine: Engine, pg: Conn, database_url: str, settings: Settings) -> list[str]:
    """Three nodes, one full; a count-2 service job scheduled by a real worker and applied here.
    The placed allocations' IDs."""
    for i, cpu in enumerate((2000, 2000, 50)):
        insert_node(pg, name=f"n{i}", cpu=cpu)
    pg.execute("""UPDATE nodes SET drivers = '{"mock": {"Detected": true, "Healthy": true}}'""")
    eval_id = register_mock_job(engine, "web", count=2, cpu=100)
    held = claim(engine)
    assert held is not None
    deadline = time.monotonic() + 30  # a hang, not a speed
    with handling(engine, database_url, held, settings) as (thread, lead):
        assert lead.term is not None
        while thread.is_alive():
            assert time.monotonic() < deadline, "the worker is still waiting for a verdict"
            with Session(bind=lead.connection) as session, session.begin():
                if apply_next(session, lead.term) is None:
                    thread.join(0.02)
    rows = pg.execute("SELECT id FROM allocations WHERE eval_id = %s", (eval_id,)).fetchall()
    assert len(rows) == 2
    return [str(row[0]) for row in rows]


def test_a_placed_allocation_serves_its_metrics_in_nomads_form(
    engine: Engine, pg: Conn, database_url: str, client: FlaskClient
) -> None:
    settings = Settings(database_url=database_url)
    assert settings.placement_metrics is True  # on by default, as Nomad always records them (issue 40)
    for alloc_id in schedule(engine, pg, database_url, settings):
        found = client.get(f"/v1/allocation/{alloc_id}").get_json()
        metrics = found["Metrics"]
        assert set(metrics) == NOMAD_KEYS
        assert metrics["NodesInPool"] == 3 and metrics["NodesAvailable"] == {"dc1": 3}
        assert metrics["NodesEvaluated"] >= 2 and isinstance(metrics["AllocationTime"], int)
        assert metrics["AllocationTime"] > 0  # the worker's clock timed the selection
        assert metrics["CoalescedFailures"] == 0 and metrics["QuotaExhausted"] == []
        best = metrics["ScoreMetaData"][0]
        assert best["NodeID"] == found["NodeID"]  # the best node is the one chosen
        assert isinstance(best["NormScore"], float)
        assert {"binpack", "job-anti-affinity", "node-reschedule-penalty", "node-affinity"} <= set(best["Scores"])
    listed = client.get("/v1/job/web/allocations").get_json()
    assert listed and all("Metrics" not in a for a in listed)  # not in lists, as Nomad's stub


def test_with_placement_metrics_off_an_allocation_has_none(
    engine: Engine, pg: Conn, database_url: str, client: FlaskClient
) -> None:
    for alloc_id in schedule(engine, pg, database_url, Settings(database_url=database_url, placement_metrics=False)):
        assert client.get(f"/v1/allocation/{alloc_id}").get_json()["Metrics"] is None
