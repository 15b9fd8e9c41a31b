"""Each role serves its own timings on CORRAL_METRICS_BIND, under Nomad's metric names."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.support.api import node_body
from tests.support.cluster import FAST, job, mock_task
from tests.support.processes import CorralFactory, free_port, wait_for, wait_healthy

pytestmark = pytest.mark.acceptance


def samples(url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    text = httpx.get(url, timeout=10).text
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def test_worker_and_applier_report_their_timings(corral: CorralFactory, database_url: str) -> None:
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    env = {"CORRAL_DATABASE_URL": database_url, "CORRAL_BIND": f"127.0.0.1:{port}", **FAST}
    server = corral(["server"], env=env)
    worker_port, applier_port = free_port(), free_port()
    corral(["worker"], env={**env, "CORRAL_METRICS_BIND": f"127.0.0.1:{worker_port}"})
    corral(["applier"], env={**env, "CORRAL_METRICS_BIND": f"127.0.0.1:{applier_port}"})
    wait_healthy(base, server)
    with httpx.Client(base_url=base, timeout=30) as api:
        node = node_body(
            str(uuid.uuid4()),
            Attributes={"kernel.name": "linux", "driver.mock": "1"},
            Drivers={"mock": {"Detected": True, "Healthy": True}},
        )
        assert api.put("/v1/node/register", json={"Node": node}).status_code == 200
        assert api.put("/v1/jobs", json={"Job": job("web", [mock_task()], count=2)}).status_code == 200
        assert wait_for(lambda: len(api.get("/v1/job/web/allocations").json()) == 2, 60)

    worker_url = f"http://127.0.0.1:{worker_port}"
    worker = samples(f"{worker_url}/v1/metrics?format=prometheus")
    assert worker[("nomad_nomad_worker_invoke_scheduler_count", (("type", "service"),))] >= 1
    assert worker[("nomad_nomad_worker_dequeue_eval_count", ())] >= 1
    assert worker[("nomad_nomad_worker_submit_plan_count", ())] >= 1
    assert samples(f"{worker_url}/metrics").keys() >= worker.keys() - {k for k in worker if "created" in k[0]}

    def invoked() -> list[dict[str, object]]:
        """The JSON summary's scheduling passes: of the last completed 10 s interval, as Nomad's,
        so they appear once the interval the work was done in has ended."""
        as_json = httpx.get(f"{worker_url}/v1/metrics", timeout=10).json()
        return [s for s in as_json["Samples"] if s["Name"] == "nomad.nomad.worker.invoke_scheduler"]

    found: list[dict[str, object]] = []

    def seen() -> bool:
        found[:] = invoked()
        return bool(found)

    assert wait_for(seen, 30)
    [sample] = found
    assert sample["Labels"] == {"type": "service"} and isinstance(sample["Count"], int) and sample["Count"] >= 1
    assert isinstance(sample["Min"], float) and isinstance(sample["Max"], float) and isinstance(sample["Sum"], float)
    assert 0 < sample["Min"] <= sample["Max"] and sample["Rate"] == pytest.approx(sample["Sum"] / 10)

    applier = samples(f"http://127.0.0.1:{applier_port}/v1/metrics?format=prometheus")
    assert applier[("nomad_nomad_plan_apply_count", ())] >= 1
    assert applier[("nomad_nomad_plan_evaluate_count", ())] >= 1
    assert applier[("nomad_nomad_plan_node_rejected_total", ())] == 0
    assert httpx.get(f"{worker_url}/v1/metrics?format=xml", timeout=10).status_code == 400


def test_a_bad_metrics_address_stops_the_role_with_a_clear_error(corral: CorralFactory, database_url: str) -> None:
    role = corral(["worker"], env={"CORRAL_DATABASE_URL": database_url, "CORRAL_METRICS_BIND": "nowhere"})
    assert role.wait(60) != 0
    assert "CORRAL_METRICS_BIND 'nowhere' must be host:port" in role.output


def test_metrics_bind_is_unused_when_unset(corral: CorralFactory, database_url: str, workdir: Path) -> None:
    # Unset (the default): nothing listens for metrics; the role runs as before.
    role = corral(["applier"], env={"CORRAL_DATABASE_URL": database_url})
    assert wait_for(lambda: "serving metrics" not in role.output and role.process.poll() is None, 5)
    assert "serving metrics" not in role.output
