"""The web UI acts as well as it shows, in Chromium against a real cluster (ACLs off): a job run
from its HCL after a plan with its diff, a group scaled, a job stopped, started and purged, an
allocation restarted and its files browsed, and the namespace selector narrowing the lists."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Dialog, expect

from tests.support.browser import PageFactory, needs_chromium
from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = [pytest.mark.browser, needs_chromium]
DEADLINE_MS = 60_000
HCL = """
job "from-ui" {
  type = "service"
  group "web" {
    count = 1
    task "server" {
      driver = "raw_exec"
      config {
        command = "/bin/sh"
        args    = ["-c", "echo hello from the ui > $NOMAD_TASK_DIR/greeting.txt; sleep 600"]
      }
      resources {
        cpu    = 20
        memory = 16
      }
    }
  }
}
"""


@pytest.fixture(scope="module")
def cluster(module_corral: CorralFactory, module_database_url: str, ui_workdir: Path) -> Iterator[Cluster]:
    running = Cluster(module_corral, module_database_url, ui_workdir)
    running.client("n1")
    yield running
    running.close()


def _accept(dialog: Dialog) -> None:
    dialog.accept()


def _statuses(cluster: Cluster, job_id: str, namespace: str = "default") -> list[str]:
    allocs = cluster.http.get(f"/v1/job/{job_id}/allocations", params={"namespace": namespace}).json()
    return sorted(a["ClientStatus"] for a in allocs if a["DesiredStatus"] == "run")


def test_a_job_is_planned_with_its_diff_and_run_from_its_hcl(cluster: Cluster, open_page: PageFactory) -> None:
    page = open_page(f"{cluster.base}/ui/jobs/run", name="run-job")
    expect(page.get_by_role("button", name="Run")).to_be_disabled()
    page.locator("#run-spec").fill(HCL)
    page.get_by_role("button", name="Plan").click()
    expect(page.locator("#plan-diff")).to_contain_text('+ Job: "from-ui"', timeout=DEADLINE_MS)
    expect(page.locator("#plan-diff")).to_contain_text('Task Group: "web" (1 create)')
    assert cluster.http.get("/v1/job/from-ui").status_code == 404  # a plan changes nothing
    page.get_by_role("button", name="Run").click()
    page.wait_for_url("**/ui/job/from-ui", timeout=DEADLINE_MS)
    assert wait_for(lambda: _statuses(cluster, "from-ui") == ["running"], 60)
    expect(page.locator("#allocations tbody td:nth-child(4)", has_text="running")).to_have_count(1, timeout=DEADLINE_MS)


def test_a_bad_job_file_is_refused_with_the_reason(cluster: Cluster, open_page: PageFactory) -> None:
    page = open_page(f"{cluster.base}/ui/jobs/run", name="run-bad")
    page.locator("#run-spec").fill('job "broken" {\n  group "g" {\n    count = "many"\n  }\n}\n')
    page.get_by_role("button", name="Plan").click()
    expect(page.locator("#run-result")).to_contain_text("Refused", timeout=DEADLINE_MS)
    expect(page.locator("#run-result")).to_contain_text("ount")
    expect(page.get_by_role("button", name="Run")).to_be_disabled()


def test_a_group_is_scaled_and_the_job_stopped_started_and_purged(cluster: Cluster, open_page: PageFactory) -> None:
    cluster.register(job("scaled", [mock_task()], count=1))
    assert wait_for(lambda: _statuses(cluster, "scaled") == ["running"], 60)
    # Nomad refuses to scale a job while its deployment is active; the UI says so (below).

    def latest() -> object:
        return (cluster.http.get("/v1/job/scaled/deployment").json() or {}).get("Status")

    assert wait_for(lambda: latest() == "successful", 60), latest()
    page = open_page(f"{cluster.base}/ui/job/scaled", name="job-scale")
    page.on("dialog", _accept)
    count = page.get_by_label("Count of group g")
    expect(count).to_have_value("1", timeout=DEADLINE_MS)
    count.fill("3")
    page.get_by_role("button", name="Scale").click()
    assert wait_for(lambda: _statuses(cluster, "scaled") == ["running"] * 3, 60), _statuses(cluster, "scaled")
    expect(page.locator("#groups tbody")).to_contain_text("3", timeout=DEADLINE_MS)

    page.get_by_role("button", name="Stop job").click()
    assert wait_for(lambda: cluster.http.get("/v1/job/scaled").json()["Stop"] is True, 30)
    assert wait_for(lambda: _statuses(cluster, "scaled") == [], 60)
    page.get_by_role("button", name="Start job").click(timeout=DEADLINE_MS)
    assert wait_for(lambda: _statuses(cluster, "scaled") == ["running"] * 3, 60), _statuses(cluster, "scaled")

    page.get_by_role("button", name="Purge job").click(timeout=DEADLINE_MS)
    page.wait_for_url("**/ui/jobs", timeout=DEADLINE_MS)
    assert wait_for(lambda: cluster.http.get("/v1/job/scaled").status_code == 404, 30)


def test_an_allocation_is_restarted_and_its_files_browsed(cluster: Cluster, open_page: PageFactory) -> None:
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", "echo kept in a file > $NOMAD_TASK_DIR/note.txt; sleep 600"]},
        "Resources": {"CPU": 20, "MemoryMB": 16},
    }
    cluster.register(job("files", [task]))
    assert wait_for(lambda: _statuses(cluster, "files") == ["running"], 60)
    (alloc,) = cluster.allocs("files")
    page = open_page(f"{cluster.base}/ui/allocation/{alloc['ID']}", name="alloc-files")
    files = page.locator("#files tbody")
    expect(files).to_contain_text("alloc/", timeout=DEADLINE_MS)
    expect(files).to_contain_text("t/")
    files.get_by_role("button", name="t/").click()
    expect(page.locator("#files-path")).to_have_text("/t/")
    files.get_by_role("button", name="local/").click()
    files.get_by_role("button", name="note.txt").click()
    expect(page.locator("#file-view")).to_have_text("kept in a file\n", timeout=DEADLINE_MS)

    page.get_by_role("button", name="Restart all tasks").click()
    expect(page.locator("#alloc-action-result")).to_have_text("Done.", timeout=DEADLINE_MS)

    def restarted() -> bool:
        states = cluster.http.get(f"/v1/allocation/{alloc['ID']}").json()["TaskStates"]
        return bool(states["t"]["Restarts"] == 1 and states["t"]["State"] == "running")

    assert wait_for(restarted, 60)


def test_the_namespace_selector_narrows_the_lists(cluster: Cluster, open_page: PageFactory) -> None:
    answer = cluster.http.put("/v1/namespace/team-a", json={"Name": "team-a"})
    assert answer.status_code == 200, answer.text
    team_job = {**job("team-only", [mock_task()]), "Namespace": "team-a"}
    assert cluster.http.put("/v1/jobs?namespace=team-a", json={"Job": team_job}).status_code == 200
    cluster.register(job("default-only", [mock_task()]))
    page = open_page(f"{cluster.base}/ui/jobs", name="jobs-namespaces")
    jobs = page.locator("#jobs tbody")
    expect(jobs).to_contain_text("team-only", timeout=DEADLINE_MS)
    expect(jobs).to_contain_text("default-only")
    page.get_by_label("Namespace").select_option("team-a")
    page.wait_for_url("**/ui/jobs?namespace=team-a", timeout=DEADLINE_MS)
    expect(jobs).to_contain_text("team-only", timeout=DEADLINE_MS)
    expect(jobs).not_to_contain_text("default-only")
    # The choice stays for the tab: the evaluations list is narrowed the same way.
    page.goto(f"{cluster.base}/ui/evaluations")
    expect(page.get_by_label("Namespace")).to_have_value("team-a", timeout=DEADLINE_MS)
