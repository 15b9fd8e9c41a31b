"""/v1/metrics: the cluster's gauges under Nomad's names, as JSON and as Prometheus text."""

from __future__ import annotations

import uuid

import psycopg
import pytest
from flask.testing import FlaskClient
from prometheus_client.parser import text_string_to_metric_families

from tests.support.api import minimal_job, node_body, register
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def scrape(client: FlaskClient) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    resp = client.get("/v1/metrics?format=prometheus")
    assert resp.status_code == 200 and resp.content_type.startswith("text/plain")
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(resp.get_data(as_text=True))
        for sample in family.samples
    }


def test_broker_plan_and_heartbeat_gauges_count_rows(client: FlaskClient) -> None:
    empty = scrape(client)
    assert empty[("nomad_nomad_broker_total_ready", ())] == 0
    assert empty[("nomad_nomad_heartbeat_active", ())] == 0
    node_id = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200
    register(client, minimal_job("web"))
    register(client, minimal_job("api"))
    figures = scrape(client)
    # Two registrations, one node registration (which evaluates no job): two evaluations ready.
    assert figures[("nomad_nomad_broker_total_ready", ())] == 2
    assert figures[("nomad_nomad_broker_total_unacked", ())] == 0
    assert figures[("nomad_nomad_plan_queue_depth", ())] == 0
    assert figures[("nomad_nomad_heartbeat_active", ())] == 1
    assert figures[("nomad_nomad_job_status_pending", ())] == 2
    queued = ("nomad_nomad_job_summary_queued", (("job", "web"), ("namespace", "default"), ("task_group", "g")))
    assert figures[queued] == 0  # nothing scheduled yet
    labels = (("datacenter", "dc1"), ("host", f"node-{node_id[:4]}"), ("node_class", "none"), ("node_id", node_id))
    assert figures[("nomad_client_unallocated_cpu", (*labels[:4], ("node_pool", "default")))] == 3900
    assert figures[("nomad_client_allocated_memory", (*labels[:4], ("node_pool", "default")))] == 0


def test_gauges_follow_allocations(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    client.put("/v1/node/register", json={"Node": node_body(node_id)})
    register(client, minimal_job("web"))
    eval_row = pg.execute("SELECT id FROM evaluations WHERE job_id = 'web'").fetchone()
    assert eval_row is not None
    insert_allocation(pg, node_id, str(eval_row[0]), cpu=500)
    figures = scrape(client)
    group = (("job", "web"), ("namespace", "default"), ("task_group", "g"))
    assert figures[("nomad_nomad_job_summary_running", group)] == 1
    node = (("datacenter", "dc1"), ("host", f"node-{node_id[:4]}"), ("node_class", "none"), ("node_id", node_id))
    assert figures[("nomad_client_allocated_cpu", (*node, ("node_pool", "default")))] == 500
    assert figures[("nomad_client_unallocated_memory", (*node, ("node_pool", "default")))] == 7936 - 256


def test_json_is_nomads_summary_shape(client: FlaskClient) -> None:
    register(client, minimal_job("web"))
    body = client.get("/v1/metrics").json
    assert body is not None and set(body) == {"Timestamp", "Gauges", "Counters", "Samples", "Points"}
    gauges = {g["Name"]: g for g in body["Gauges"] if not g["Labels"]}
    assert gauges["nomad.nomad.broker.total_ready"]["Value"] == 1
    assert gauges["nomad.nomad.blocked_evals.total_blocked"]["Value"] == 0
    summaries = [g for g in body["Gauges"] if g["Name"] == "nomad.nomad.job_summary.queued"]
    assert summaries == [
        {
            "Name": "nomad.nomad.job_summary.queued",
            "Value": 0,
            "Labels": {"job": "web", "task_group": "g", "namespace": "default"},
        }
    ]


def test_unknown_format_is_400_naming_the_parameter(client: FlaskClient) -> None:
    resp = client.get("/v1/metrics?format=xml")
    assert resp.status_code == 400
    assert resp.json is not None and resp.json["errors"][0]["field"] == "format"
