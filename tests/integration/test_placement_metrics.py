"""A job through the pipeline (a real worker, the applier): every allocation it placed carries
its placement metrics, served by /v1/allocation/:id as Nomad's AllocMetric."""

from __future__ import annotations

import time

import psycopg
import pytest
from alembic import command
from flask.testing import FlaskClient
from sqlalchemy import Engine
from sqlalchemy.orm import Session

from app.db.schema import alembic_config, upgrade
from app.pipeline.plan_apply.applier import apply_next
from app.settings.config import Settings
from tests.support.events import events, has, read_frames
from tests.support.pipeline import claim, handling, register_mock_job
from tests.support.rows import insert_node

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
# The revision before the text columns (0037): the schema a role of the previous release ran on.
BEFORE_TEXT_COLUMNS = "0036_acl_oidc_requests"
NOMAD_KEYS = {
    *("NodesEvaluated", "NodesFiltered", "NodesInPool", "NodesAvailable", "ClassFiltered", "ConstraintFiltered"),
    *("NodesExhausted", "ClassExhausted", "DimensionExhausted", "QuotaExhausted", "ResourcesExhausted"),
    *("Scores", "ScoreMetaData", "AllocationTime", "CoalescedFailures"),
}


def schedule(engine: Engine, pg: Conn, database_url: str, settings: Settings, job_id: str = "web") -> list[str]:
    """Three nodes, one full (added by the first call); a count-2 service job scheduled by a real
    worker and applied here. The placed allocations' IDs."""
    if pg.execute("SELECT count(*) FROM nodes").fetchone() == (0,):
        for i, cpu in enumerate((2000, 2000, 50)):
            insert_node(pg, name=f"n{i}", cpu=cpu)
        pg.execute("""UPDATE nodes SET drivers = '{"mock": {"Detected": true, "Healthy": true}}'""")
    eval_id = register_mock_job(engine, job_id, count=2, cpu=100)
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


def test_metrics_are_stored_as_text_and_rows_from_before_still_serve_theirs(
    engine: Engine, pg: Conn, database_url: str, client: FlaskClient
) -> None:
    """Revision 0037: the text column holds them; a row written before (or by an older applier)
    has them in the jsonb column only, and is served the same."""
    first, second = schedule(engine, pg, database_url, Settings(database_url=database_url))
    stored = pg.execute("SELECT placement_metrics, metrics FROM allocations WHERE id = %s", (first,)).fetchone()
    assert stored is not None
    text, jsonb = stored
    assert isinstance(text, str) and text.startswith('{"Evaluated":') and jsonb == {}
    # Revision 0040: the events' snapshots do not copy them; the stream reads the allocation's.
    copied = pg.execute(
        "SELECT count(*) FILTER (WHERE snapshot ? 'placement_metrics'), count(*) FROM events "
        "WHERE topic = 'Allocation' AND key = ANY(%s)",
        ([first, second],),
    ).fetchone()
    assert copied is not None and copied[0] == 0 and int(str(copied[1])) >= 2
    assert_events_carry_them(client, [first, second])
    served = client.get(f"/v1/allocation/{first}").get_json()["Metrics"]
    pg.execute(
        "UPDATE allocations SET metrics = CAST(placement_metrics AS jsonb), placement_metrics = NULL WHERE id = %s",
        (first,),
    )
    assert client.get(f"/v1/allocation/{first}").get_json()["Metrics"] == served
    plan_lines = pg.execute("SELECT placement_metrics FROM plans").fetchall()
    assert any(isinstance(line, str) and first in line and second in line for (line,) in plan_lines)
    # A snapshot written before 0040 carries its own copy, which the stream serves.
    pg.execute(
        "UPDATE events SET snapshot = snapshot || jsonb_build_object('placement_metrics', %s::text) "
        "WHERE topic = 'Allocation' AND key = %s",
        (text, first),
    )
    assert_events_carry_them(client, [first])


def assert_events_carry_them(client: FlaskClient, alloc_ids: list[str]) -> None:
    """The event stream's PlanResult events carry each allocation's metrics, as its GET does."""
    frames = read_frames(client, "topic=Allocation", until=has("Allocation", "PlanResult", alloc_ids[-1]))
    placed = {e["Key"]: e["Payload"]["Allocation"] for e in events(frames) if e["Type"] == "PlanResult"}
    for alloc_id in alloc_ids:
        metrics = placed[alloc_id]["Metrics"]
        assert metrics is not None and metrics == client.get(f"/v1/allocation/{alloc_id}").get_json()["Metrics"]


def _columns(pg: Conn) -> set[str]:
    rows = pg.execute(
        "SELECT table_name FROM information_schema.columns WHERE column_name = 'placement_metrics'"
    ).fetchall()
    return {str(table) for (table,) in rows}


def test_on_the_schema_before_0037_they_ride_inline_and_after_the_upgrade_they_move_to_text(
    engine: Engine, pg: Conn, database_url: str, client: FlaskClient
) -> None:
    """A rolling upgrade: the roles run on the schema before revision 0037 (no text columns:
    the plan carries the metrics inside its JSON and the applier writes them to the jsonb
    column), then the schema is upgraded under them and the next placements go to the text
    column, whatever the worker still believes about the schema (the applier reads both forms)."""
    engine.dispose()
    command.downgrade(alembic_config(database_url), BEFORE_TEXT_COLUMNS)
    assert _columns(pg) == set()
    settings = Settings(database_url=database_url)
    before = schedule(engine, pg, database_url, settings, "before")
    inline = pg.execute("SELECT count(*) FROM plans WHERE node_allocation::text LIKE '%\"Metrics\"%'").fetchone()
    assert inline is not None and inline != (0,)
    for alloc_id in before:
        stored = pg.execute("SELECT metrics ->> 'Evaluated' FROM allocations WHERE id = %s", (alloc_id,)).fetchone()
        assert stored is not None and int(str(stored[0])) >= 2
        served = client.get(f"/v1/allocation/{alloc_id}").get_json()["Metrics"]
        assert set(served) == NOMAD_KEYS and served["NodesInPool"] == 3
    assert_events_carry_them(client, before)

    engine.dispose()
    upgrade(database_url)
    assert _columns(pg) == {"plans", "allocations"}
    after = schedule(engine, pg, database_url, settings, "after")
    for alloc_id in after:
        stored = pg.execute("SELECT placement_metrics, metrics FROM allocations WHERE id = %s", (alloc_id,)).fetchone()
        assert stored is not None
        text, jsonb = stored
        assert isinstance(text, str) and text.startswith('{"Evaluated":') and jsonb == {}
        served = client.get(f"/v1/allocation/{alloc_id}").get_json()["Metrics"]
        assert set(served) == NOMAD_KEYS and served["NodesInPool"] == 3
    for alloc_id in before:  # rows from before the upgrade keep serving theirs
        assert client.get(f"/v1/allocation/{alloc_id}").get_json()["Metrics"]["NodesInPool"] == 3
