"""The web UI in Chromium against a real cluster with ACLs off: allocations appear live on a job
page, an allocation page tails its task's log and shows its placement metrics, a canary is
promoted and a node drained from the UI, a placement failure is explained in words, and every
page renders at desktop and phone width."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import PageFactory, needs_chromium
from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = [pytest.mark.browser, needs_chromium]
SECOND = 1_000_000_000
DEADLINE_MS = 60_000


@pytest.fixture(scope="module")
def cluster(module_corral: CorralFactory, module_database_url: str, ui_workdir: Path) -> Iterator[Cluster]:
    running = Cluster(module_corral, module_database_url, ui_workdir, {"CORRAL_PLACEMENT_METRICS": "true"})
    running.client("n1")
    yield running
    running.close()


def not_reloaded(page: Page) -> None:
    """Marks the page's window: the mark survives only if the page is never reloaded."""
    page.evaluate("window.__stillTheSamePage = true")


def assert_not_reloaded(page: Page) -> None:
    assert page.evaluate("window.__stillTheSamePage") is True


def test_allocations_appear_live_on_the_job_page(cluster: Cluster, open_page: PageFactory) -> None:
    cluster.register(job("live", [mock_task()], count=1))
    page = open_page(f"{cluster.base}/ui/job/live", name="job-live")
    running = page.locator("#allocations tbody td:nth-child(4)", has_text="running")
    expect(running).to_have_count(1, timeout=DEADLINE_MS)
    not_reloaded(page)
    first = page.locator("#allocations tbody a").first
    focused = first.get_attribute("href")
    first.focus()  # a keyboard user on the row keeps their place while rows arrive

    cluster.register(job("live", [mock_task()], count=3))
    expect(running).to_have_count(3, timeout=DEADLINE_MS)
    expect(page.locator("#groups tbody")).to_contain_text("3")
    assert_not_reloaded(page)
    assert page.evaluate("document.activeElement.getAttribute('href')") == focused


def test_allocation_page_shows_and_follows_the_task_log(cluster: Cluster, open_page: PageFactory) -> None:
    script = "echo first line from the task; sleep 4; echo second line from the task; sleep 600"
    task = {"Name": "t", "Driver": "raw_exec", "Config": {"command": "/bin/sh", "args": ["-c", script]}}
    cluster.register(job("logs", [{**task, "Resources": {"CPU": 20, "MemoryMB": 16}}]))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("logs")] == ["running"], 60)
    alloc = cluster.allocs("logs")[0]

    page = open_page(f"{cluster.base}/ui/allocation/{alloc['ID']}", name="allocation")
    expect(page.locator("#log")).to_contain_text("first line from the task", timeout=DEADLINE_MS)
    not_reloaded(page)
    expect(page.locator("#log")).to_contain_text("second line from the task", timeout=DEADLINE_MS)
    assert_not_reloaded(page)
    expect(page.locator("#tasks")).to_contain_text("Restarts: 0")
    expect(page.locator("#alloc-facts")).to_contain_text("20 MHz CPU, 16 MB memory")
    expect(page.locator("#alloc-facts")).to_contain_text("n1")
    # How its node was chosen: the counts and the one node's scores by scorer.
    expect(page.locator("#placement-facts")).to_contain_text("Nodes evaluated1 of 1 in the pool")
    expect(page.locator("#placement-scores thead")).to_contain_text("binpack")
    expect(page.locator("#placement-scores tbody tr")).to_have_count(1)


def test_a_placement_failure_is_explained_in_words(cluster: Cluster, open_page: PageFactory) -> None:
    windows = job("windows", [mock_task()])
    windows["Constraints"] = [{"LTarget": "${attr.kernel.name}", "RTarget": "windows", "Operand": "="}]
    cluster.register(windows)

    page = open_page(f"{cluster.base}/ui/job/windows", name="placement-failure")
    expected = (
        'Task group "g" could not place 1 allocation: 1 node filtered by constraint ${attr.kernel.name} = windows'
    )
    expect(page.locator("#failures")).to_contain_text(expected, timeout=DEADLINE_MS)

    queue = open_page(f"{cluster.base}/ui/evaluations", name="evaluations")
    expect(queue.locator("#evals-blocked")).to_contain_text("windows", timeout=DEADLINE_MS)
    expect(queue.locator("#evals-blocked")).to_contain_text("filtered by constraint ${attr.kernel.name} = windows")
    # The blocked evaluation links the one whose failures it carries (nested cells render as nodes, not text).
    expect(queue.locator("#evals-blocked a", has_text="after ")).to_have_count(1)
    assert "http" not in queue.locator("#evals-blocked tbody").inner_text()


def test_placement_failure_wording_covers_every_reason(cluster: Cluster, open_page: PageFactory) -> None:
    page = open_page(f"{cluster.base}/ui/jobs", name="wording")
    metric = {
        "NodesEvaluated": 5,
        "NodesInPool": 6,
        "NodesAvailable": {"dc1": 5, "dc2": 0},
        "ClassFiltered": {"gpu": 1},
        "ConstraintFiltered": {"${attr.kernel.name} = windows": 3},
        "NodesExhausted": 2,
        "DimensionExhausted": {"memory": 2},
        "ClassExhausted": {"small": 2},
        "QuotaExhausted": ["cpu"],
        "CoalescedFailures": 2,
    }
    explained = page.evaluate(
        "async (m) => (await import('/ui/static/ui.js')).explainFailure('web', m)",
        metric,
    )
    assert explained == (
        'Task group "web" could not place 3 allocations: no nodes are available in datacenter dc2, '
        "1 node filtered by class gpu, 3 nodes filtered by constraint ${attr.kernel.name} = windows, "
        "2 exhausted on memory, class small exhausted on 2 nodes, quota limit reached on cpu "
        "(5 of 6 nodes in the pool evaluated)."
    )
    nothing = page.evaluate("async () => (await import('/ui/static/ui.js')).explainFailure('g', {NodesEvaluated: 0})")
    assert nothing == 'Task group "g" could not place 1 allocation: no nodes were eligible for evaluation.'
    exhausted = {"NodesEvaluated": 1, "NodesInPool": 1, "NodesExhausted": 1}
    only = page.evaluate("async (m) => (await import('/ui/static/ui.js')).explainFailure('g', m)", exhausted)
    assert only == 'Task group "g" could not place 1 allocation: 1 node exhausted (1 of 1 node in the pool evaluated).'


def canary_service(tag: str, **update: Any) -> dict[str, Any]:
    block = {"MaxParallel": 1, "MinHealthyTime": SECOND, "HealthyDeadline": 20 * SECOND}
    block["ProgressDeadline"] = 60 * SECOND
    spec = job("canary", [mock_task(tag=tag)], count=1, Update={**block, **update})
    spec["TaskGroups"][0]["RestartPolicy"] = {"Attempts": 0, "Mode": "fail"}
    return spec


def latest_deployment(cluster: Cluster) -> dict[str, Any]:
    return dict(cluster.http.get("/v1/job/canary/deployment").json() or {})


def test_a_canary_is_promoted_from_the_job_page_and_versions_diff(cluster: Cluster, open_page: PageFactory) -> None:
    cluster.register(canary_service("v0"))
    assert wait_for(lambda: latest_deployment(cluster).get("Status") == "successful", 90), latest_deployment(cluster)
    cluster.register(canary_service("v1", Canary=1))

    def canary_healthy() -> bool:
        found = latest_deployment(cluster)
        group = (found.get("TaskGroups") or {}).get("g") or {}
        return found.get("JobVersion") == 1 and group.get("HealthyAllocs") == 1

    assert wait_for(canary_healthy, 90), latest_deployment(cluster)
    page = open_page(f"{cluster.base}/ui/job/canary", name="job-canary")
    promote = page.get_by_role("button", name="Promote canaries")
    expect(promote).to_be_visible(timeout=DEADLINE_MS)
    not_reloaded(page)
    promote.click()

    assert wait_for(lambda: latest_deployment(cluster).get("Status") == "successful", 90), latest_deployment(cluster)
    assert latest_deployment(cluster)["TaskGroups"]["g"]["Promoted"] is True
    expect(page.locator("#deployments article").first).to_contain_text("successful", timeout=DEADLINE_MS)
    expect(promote).to_have_count(0)

    page.select_option("#diff-a", "0")
    page.select_option("#diff-b", "1")
    page.get_by_role("button", name="Show diff").click()
    expect(page.locator("#diff")).to_contain_text('- .TaskGroups[0].Tasks[0].Config.tag: "v0"')
    expect(page.locator("#diff")).to_contain_text('+ .TaskGroups[0].Tasks[0].Config.tag: "v1"')
    assert_not_reloaded(page)


def test_a_deployment_is_paused_resumed_and_failed_from_the_job_page(cluster: Cluster, open_page: PageFactory) -> None:
    cluster.register(canary_service("v2", Canary=1))
    assert wait_for(lambda: latest_deployment(cluster).get("JobVersion") == 2, 60), latest_deployment(cluster)
    page = open_page(f"{cluster.base}/ui/job/canary", name="job-deployment-controls")
    article = page.locator("#deployments article").first

    def status() -> str:
        return str(latest_deployment(cluster).get("Status"))

    article.get_by_role("button", name="Pause").click()
    assert wait_for(lambda: status() == "paused", 30), latest_deployment(cluster)
    article.get_by_role("button", name="Resume").click()
    assert wait_for(lambda: status() == "running", 30), latest_deployment(cluster)
    expect(article.get_by_role("button", name="Pause")).to_be_visible(timeout=DEADLINE_MS)
    article.get_by_role("button", name="Fail").click()
    assert wait_for(lambda: status() == "failed", 30), latest_deployment(cluster)
    expect(article).to_contain_text("failed", timeout=DEADLINE_MS)
    expect(article.get_by_role("button")).to_have_count(0)


def test_an_evaluation_is_triggered_and_an_allocation_stopped_from_their_pages(
    cluster: Cluster, open_page: PageFactory
) -> None:
    cluster.register(job("again", [mock_task()]))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("again")] == ["running"], 60)
    (first,) = cluster.http.get("/v1/job/again/evaluations").json()
    page = open_page(f"{cluster.base}/ui/evaluation/{first['ID']}", name="evaluation-again")
    expect(page.locator("#eval-facts")).to_contain_text("job-register", timeout=DEADLINE_MS)
    page.get_by_role("button", name="Evaluate the job again").click()
    expect(page.locator("#eval-result")).to_contain_text("Created", timeout=DEADLINE_MS)
    evaluations = cluster.http.get("/v1/job/again/evaluations").json()
    assert len(evaluations) == 2, evaluations

    (alloc,) = cluster.allocs("again")
    page = open_page(f"{cluster.base}/ui/allocation/{alloc['ID']}", name="allocation-stop")
    stop = page.get_by_role("button", name="Stop and reschedule")
    stop.click(timeout=DEADLINE_MS)
    assert wait_for(lambda: len(cluster.allocs("again")) == 2, 60), cluster.allocs("again")
    stopped = cluster.http.get(f"/v1/allocation/{alloc['ID']}").json()
    assert stopped["DesiredStatus"] == "stop" and stopped["NextAllocation"]
    expect(stop).to_have_count(0, timeout=DEADLINE_MS)  # a stopping allocation offers no stop


def test_every_page_renders_on_a_desktop_and_a_phone(cluster: Cluster, open_page: PageFactory) -> None:
    cluster.register(job("smoke", [mock_task()]))
    node_id = cluster.node_id("n1")
    evaluation = cluster.http.get("/v1/job/smoke/evaluations").json()[0]["ID"]
    checks = {
        "/ui/": ("#counts", "Nodes ready"),
        "/ui/jobs": ("#jobs", "smoke"),
        "/ui/job/smoke": ("#allocations", "running"),
        "/ui/nodes": ("#nodes", "n1"),
        f"/ui/node/{node_id}": ("#node-facts", "dc1"),
        "/ui/evaluations": ("#evals-recent", "smoke"),
        f"/ui/evaluation/{evaluation}": ("#eval-facts", "job-register"),
    }
    for width, height, device in ((1280, 800, "desktop"), (390, 844, "phone")):
        for path, (where, text) in checks.items():
            name = f"{device}-{re.sub(r'[^a-z]+', '-', path.strip('/')) or 'ui'}"
            page = open_page(f"{cluster.base}{path}", width=width, height=height, name=name)
            expect(page.locator(where)).to_contain_text(text, timeout=DEADLINE_MS)
            overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
            assert overflow <= 0, f"{path} is wider than a {width}px screen by {overflow}px"


def test_jobs_list_filters_and_searches(cluster: Cluster, open_page: PageFactory) -> None:
    cluster.register(job("batchy", [mock_task()], kind="batch"))
    cluster.register(job("servicey", [mock_task()]))
    page = open_page(f"{cluster.base}/ui/jobs", name="jobs-filtered")
    expect(page.locator("#jobs")).to_contain_text("batchy", timeout=DEADLINE_MS)
    page.select_option("#job-type", "batch")
    expect(page.locator("#jobs")).not_to_contain_text("servicey")
    page.select_option("#job-type", "")
    page.fill("#job-search", "servic")
    expect(page.locator("#jobs tbody tr")).to_have_count(1)
    expect(page.locator("#jobs")).to_contain_text("servicey")


def scheduler_config(cluster: Cluster) -> dict[str, Any]:
    return dict(cluster.http.get("/v1/operator/scheduler/configuration").json()["SchedulerConfig"])


def test_overview_charts_activity_lists_gc_runs_and_edits_the_scheduler_configuration(
    cluster: Cluster, open_page: PageFactory
) -> None:
    cluster.register(job("charted", [mock_task()], count=2))
    assert wait_for(lambda: [a["ClientStatus"] for a in cluster.allocs("charted")] == ["running"] * 2, 60)
    # A forced GC keeps the running allocations (and so their evaluation): the chart still counts them.
    collected = cluster.http.put("/v1/system/gc", timeout=120)
    assert collected.status_code == 200, collected.text
    page = open_page(f"{cluster.base}/ui/", name="overview")
    expect(page.locator("#gc-runs tbody tr").first).to_contain_text("force-gc", timeout=DEADLINE_MS)
    expect(page.locator("#gc-runs tbody tr").first).to_contain_text("complete")
    expect(page.locator("#activity-placements")).to_have_text(re.compile(r"^[1-9][0-9]*$"))
    expect(page.locator("#activity-desc")).to_contain_text("placements and")
    assert page.locator("#activity-chart polyline").count() == 2
    busy = page.locator("#activity-table tbody tr").first.locator("td")
    assert int(busy.nth(1).inner_text()) + int(busy.nth(2).inner_text()) > 0
    dark = open_page(f"{cluster.base}/ui/", name="overview-dark", color_scheme="dark")
    expect(dark.locator("#activity-chart polyline")).to_have_count(2, timeout=DEADLINE_MS)
    stroke = "getComputedStyle(document.querySelector('#activity-chart .placements')).stroke"
    assert page.evaluate(stroke) != dark.evaluate(stroke)  # the lines follow the colour scheme

    expect(page.locator("#scheduler-index")).to_contain_text("Modify index", timeout=DEADLINE_MS)
    page.select_option("select[name=SchedulerAlgorithm]", "spread")
    # Someone else changes it after the page read it: the page's write must not overwrite theirs.
    other = {"SchedulerAlgorithm": "binpack", "MemoryOversubscriptionEnabled": True}
    assert cluster.http.put("/v1/operator/scheduler/configuration", json=other).status_code == 200
    save = page.get_by_role("button", name="Save (check-and-set)")
    save.click()
    expect(page.locator("#scheduler-result")).to_contain_text("someone changed the configuration first")
    assert scheduler_config(cluster)["SchedulerAlgorithm"] == "binpack"

    expect(page.locator("#scheduler-index")).to_have_text(f"Modify index {scheduler_config(cluster)['ModifyIndex']}")
    expect(page.locator("input[name=MemoryOversubscriptionEnabled]")).to_be_checked()
    page.select_option("select[name=SchedulerAlgorithm]", "spread")
    save.click()
    expect(page.locator("#scheduler-result")).to_contain_text("Saved.")
    assert scheduler_config(cluster)["SchedulerAlgorithm"] == "spread"
    assert scheduler_config(cluster)["MemoryOversubscriptionEnabled"] is True


def test_dark_mode_follows_the_system_preference(cluster: Cluster, open_page: PageFactory) -> None:
    light = open_page(f"{cluster.base}/ui/jobs", name="jobs-light")
    dark = open_page(f"{cluster.base}/ui/jobs", name="jobs-dark", color_scheme="dark")
    background = "getComputedStyle(document.body).backgroundColor"
    assert light.evaluate(background) != dark.evaluate(background)


def test_a_node_is_drained_and_made_eligible_again_from_its_page(cluster: Cluster, open_page: PageFactory) -> None:
    # Last in the module and on a node of its own: the drain moves work off it. With nothing to
    # move the drain completes at once, leaving the node ineligible until someone says otherwise.
    cluster.client("drainee")
    node_id = cluster.node_id("drainee")

    def node() -> dict[str, Any]:
        return dict(cluster.http.get(f"/v1/node/{node_id}").json())

    page = open_page(f"{cluster.base}/ui/node/{node_id}", name="node-drain")
    drain = page.locator("#drain-button")
    expect(drain).to_have_text("Drain (1h deadline)", timeout=DEADLINE_MS)
    not_reloaded(page)
    drain.click()
    assert wait_for(lambda: node()["LastDrain"] is not None and node()["DrainStrategy"] is None, 30), node()
    assert node()["SchedulingEligibility"] == "ineligible"
    expect(page.locator("#node-facts")).to_contain_text("Last drain: complete", timeout=DEADLINE_MS)
    expect(page.locator("#node-facts time")).not_to_have_count(0)
    assert "object" not in page.locator("#node-facts").inner_text()
    eligibility = page.locator("#eligibility-button")
    expect(eligibility).to_have_text("Mark eligible")

    eligibility.click()
    assert wait_for(lambda: node()["SchedulingEligibility"] == "eligible", 30), node()
    expect(eligibility).to_have_text("Mark ineligible", timeout=DEADLINE_MS)
    assert_not_reloaded(page)
