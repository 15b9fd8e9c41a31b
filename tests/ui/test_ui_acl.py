"""The web UI with ACLs on: an anonymous visitor gets the token prompt and no data; a token
typed into the prompt is kept for the tab and every page renders with it; a control the token may
not use answers 403 from the API, which the page shows, and then hides that control."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.support.browser import PageFactory, needs_chromium
from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = [pytest.mark.browser, needs_chromium]
DEADLINE_MS = 60_000


class AclCluster:
    def __init__(self, cluster: Cluster, management: str, reader: str) -> None:
        self.cluster, self.management, self.reader = cluster, management, reader
        self.base = cluster.base


@pytest.fixture(scope="module")
def acl_cluster(module_corral: CorralFactory, module_database_url: str, ui_workdir: Path) -> Iterator[AclCluster]:
    cluster = Cluster(module_corral, module_database_url, ui_workdir, {"CORRAL_ACL_ENABLED": "true"})
    http = cluster.http
    management = http.post("/v1/acl/bootstrap").json()["SecretID"]
    root = {"X-Nomad-Token": management}
    rules = 'namespace "default" { policy = "read" }\nnode { policy = "read" }\noperator { policy = "read" }'
    assert http.put("/v1/acl/policy/readers", json={"Rules": rules}, headers=root).status_code == 200
    made = http.put("/v1/acl/token", json={"Name": "r", "Type": "client", "Policies": ["readers"]}, headers=root)
    home = ui_workdir / "acl-client"
    home.mkdir(exist_ok=True)
    env = {**cluster.env, "CORRAL_ADDR": cluster.base, "CORRAL_TOKEN": management}
    module_corral(["client", "--name", "acl-client", "--driver", "mock"], env=env, cwd=home)
    assert wait_for(lambda: cluster.node_status("acl-client") == "ready", 60)
    assert http.put("/v1/jobs", json={"Job": job("secret-job", [mock_task()])}, headers=root).status_code == 200
    yield AclCluster(cluster, management, made.json()["SecretID"])
    cluster.close()


def sign_in(page: Page, secret: str) -> None:
    expect(page.locator("#token-form")).to_be_visible(timeout=DEADLINE_MS)
    page.fill("#token-input", secret)
    page.get_by_role("button", name="Use token").click()


def test_an_anonymous_visitor_sees_the_token_prompt_and_no_data(
    acl_cluster: AclCluster, open_page: PageFactory
) -> None:
    page = open_page(f"{acl_cluster.base}/ui/jobs", name="anonymous")
    expect(page.locator("#token-form")).to_be_visible(timeout=DEADLINE_MS)
    expect(page.locator("#content")).to_be_hidden()
    assert "secret-job" not in page.content()

    sign_in(page, "00000000-0000-4000-8000-000000000000")
    expect(page.locator("#token-error")).to_contain_text("That token was refused", timeout=DEADLINE_MS)
    assert "secret-job" not in page.content()

    sign_in(page, acl_cluster.management)
    expect(page.locator("#jobs")).to_contain_text("secret-job", timeout=DEADLINE_MS)
    expect(page.locator("#token-form")).to_be_hidden()


def test_pages_render_with_a_token(acl_cluster: AclCluster, open_page: PageFactory) -> None:
    node_id = acl_cluster.cluster.node_id("acl-client")
    page = open_page(f"{acl_cluster.base}/ui/jobs", name="acl-pages")
    sign_in(page, acl_cluster.management)
    checks = {
        "/ui/": ("#counts", "Nodes ready"),
        "/ui/job/secret-job": ("#allocations", "running"),
        "/ui/nodes": ("#nodes", "acl-client"),
        f"/ui/node/{node_id}": ("#node-facts", "dc1"),
        "/ui/evaluations": ("#evals-recent", "secret-job"),
    }
    for path, (where, text) in checks.items():
        page.goto(f"{acl_cluster.base}{path}")  # the token stays in the tab's sessionStorage
        expect(page.locator(where)).to_contain_text(text, timeout=DEADLINE_MS)


def test_a_refused_control_shows_the_refusal_and_is_hidden(acl_cluster: AclCluster, open_page: PageFactory) -> None:
    node_id = acl_cluster.cluster.node_id("acl-client")
    page = open_page(f"{acl_cluster.base}/ui/node/{node_id}", name="reader-node")
    sign_in(page, acl_cluster.reader)
    drain = page.locator("#drain-button")
    expect(drain).to_have_text("Drain (1h deadline)", timeout=DEADLINE_MS)
    drain.click()
    expect(page.locator("#node-result")).to_contain_text("Permission denied")
    expect(page.locator("section[data-needs=node-write]")).to_be_hidden()
    node = acl_cluster.cluster.http.get(f"/v1/node/{node_id}", headers={"X-Nomad-Token": acl_cluster.management})
    assert node.json()["DrainStrategy"] is None and node.json()["SchedulingEligibility"] == "eligible"


def test_ui_authenticate_signs_the_browser_in_with_the_cli_token(
    acl_cluster: AclCluster, module_corral: CorralFactory, open_page: PageFactory
) -> None:
    """`corral ui -authenticate -show-url` prints a URL whose one-time token the page exchanges:
    the tab is signed in as the CLI's token, and the spent secret leaves the address bar."""
    env = {"CORRAL_ADDR": acl_cluster.base, "CORRAL_TOKEN": acl_cluster.management}
    command = module_corral(["ui", "-authenticate", "-show-url", "secret-job"], env=env)
    assert command.wait() == 0, command.output
    url = command.output.strip().removeprefix("URL for web UI: ")
    assert url.startswith(f"{acl_cluster.base}/ui/job/secret-job?namespace=default&ott="), command.output

    page = open_page(url, name="ott")
    expect(page.locator("#allocations")).to_contain_text("running", timeout=DEADLINE_MS)
    expect(page.locator("#token-form")).to_be_hidden()
    assert "ott=" not in page.url and "namespace=default" in page.url
    page.goto(f"{acl_cluster.base}/ui/nodes")  # kept for the tab, as a typed token is
    expect(page.locator("#nodes")).to_contain_text("acl-client", timeout=DEADLINE_MS)

    spent = open_page(url, name="ott-spent")  # a one-time token exchanges once
    expect(spent.locator("#token-error")).to_contain_text("That one-time token was refused", timeout=DEADLINE_MS)
    expect(spent.locator("#content")).to_be_hidden()
