"""The web UI's Variables and Services pages and the exec terminal, in Chromium against a real
cluster with ACLs on: a variable created, edited with check-and-set (a conflicting write is
refused and the current version shown), and deleted; a token without the variables capability
gets a refusal in words; the catalog and a service's instances with their passing checks; a
command run in a raw_exec task from the allocation page (Nomad's ws_handshake: the token in the
first WebSocket frame)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Dialog, Page, expect

from tests.support.browser import PageFactory, needs_chromium
from tests.support.cluster import Cluster, job
from tests.support.processes import CorralFactory, wait_for

pytestmark = [pytest.mark.browser, needs_chromium]
DEADLINE_MS = 60_000


class StackCluster:
    def __init__(self, cluster: Cluster, management: str, reader: str) -> None:
        self.cluster, self.management, self.reader = cluster, management, reader
        self.base = cluster.base
        self.root = {"X-Nomad-Token": management}


@pytest.fixture(scope="module")
def stack(module_corral: CorralFactory, module_database_url: str, ui_workdir: Path) -> Iterator[StackCluster]:
    cluster = Cluster(module_corral, module_database_url, ui_workdir, {"CORRAL_ACL_ENABLED": "true"})
    http = cluster.http
    management = http.post("/v1/acl/bootstrap").json()["SecretID"]
    root = {"X-Nomad-Token": management}
    rules = 'namespace "default" { policy = "read" }\nnode { policy = "read" }'
    assert http.put("/v1/acl/policy/readers", json={"Rules": rules}, headers=root).status_code == 200
    made = http.put("/v1/acl/token", json={"Name": "r", "Type": "client", "Policies": ["readers"]}, headers=root)
    cluster.client("stack-client", env={"CORRAL_TOKEN": management})
    yield StackCluster(cluster, management, made.json()["SecretID"])
    cluster.close()


def sign_in(page: Page, secret: str) -> None:
    expect(page.locator("#token-form")).to_be_visible(timeout=DEADLINE_MS)
    page.fill("#token-input", secret)
    page.get_by_role("button", name="Use token").click()


def _accept(dialog: Dialog) -> None:
    dialog.accept()


def _variable(stack: StackCluster, path: str) -> dict[str, Any] | None:
    answer = stack.cluster.http.get(f"/v1/var/{path}", headers=stack.root)
    return answer.json() if answer.status_code == 200 else None


def _running(stack: StackCluster, job_id: str) -> list[dict[str, Any]]:
    allocs = stack.cluster.http.get(f"/v1/job/{job_id}/allocations", headers=stack.root).json()
    return [a for a in allocs if a["ClientStatus"] == "running" and a["DesiredStatus"] == "run"]


def test_a_variable_is_created_edited_with_check_and_set_and_deleted(
    stack: StackCluster, open_page: PageFactory
) -> None:
    page = open_page(f"{stack.base}/ui/variables/new", name="variable-new")
    page.on("dialog", _accept)
    sign_in(page, stack.management)
    page.get_by_label("Path").fill("app/config")
    page.get_by_label("Key").fill("greeting")
    page.locator(".item-value").fill("hello")
    page.get_by_role("button", name="Save").click()
    page.wait_for_url("**/ui/variable/app/config", timeout=DEADLINE_MS)
    expect(page.locator("#var-facts")).to_contain_text("Modify index", timeout=DEADLINE_MS)
    found = _variable(stack, "app/config")
    assert found is not None and found["Items"] == {"greeting": "hello"}

    # Someone else writes first: the page's save is a check-and-set on the index it loaded.
    value = page.locator(".item-value")
    expect(value).to_have_value("hello", timeout=DEADLINE_MS)
    value.fill("mine")
    elsewhere = stack.cluster.http.put(
        "/v1/var/app/config", json={"Items": {"greeting": "changed elsewhere"}}, headers=stack.root
    )
    assert elsewhere.status_code == 200
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#var-conflict")).to_be_visible(timeout=DEADLINE_MS)
    expect(page.locator("#var-conflict-text")).to_contain_text(f"it is now at {elsewhere.json()['ModifyIndex']}")
    expect(page.locator("#var-conflict-items")).to_contain_text("changed elsewhere")
    assert (_variable(stack, "app/config") or {}).get("Items") == {"greeting": "changed elsewhere"}  # refused
    page.get_by_role("button", name="Load the current version").click()
    expect(value).to_have_value("changed elsewhere", timeout=DEADLINE_MS)
    value.fill("mine")
    page.get_by_role("button", name="Save").click()
    expect(page.locator("#var-result")).to_contain_text("Saved", timeout=DEADLINE_MS)
    assert (_variable(stack, "app/config") or {}).get("Items") == {"greeting": "mine"}

    page.goto(f"{stack.base}/ui/variables")
    expect(page.locator("#variables tbody")).to_contain_text("app/config", timeout=DEADLINE_MS)
    page.get_by_label("Path prefix").fill("nomad/")
    expect(page.locator("#variables tbody")).to_contain_text("No variable has that prefix.", timeout=DEADLINE_MS)
    page.get_by_label("Path prefix").fill("app/")
    page.locator("#variables tbody").get_by_role("link", name="app/config").click(timeout=DEADLINE_MS)
    expect(page.locator(".item-value")).to_have_value("mine", timeout=DEADLINE_MS)
    page.get_by_role("button", name="Delete").click(timeout=DEADLINE_MS)
    page.wait_for_url("**/ui/variables", timeout=DEADLINE_MS)
    assert wait_for(lambda: _variable(stack, "app/config") is None, 30)


def test_a_token_without_the_variables_capability_sees_a_refusal(stack: StackCluster, open_page: PageFactory) -> None:
    assert (
        stack.cluster.http.put("/v1/var/app/secret", json={"Items": {"k": "v"}}, headers=stack.root).status_code == 200
    )
    page = open_page(f"{stack.base}/ui/variable/app/secret", name="variable-denied")
    sign_in(page, stack.reader)
    expect(page.locator("#var-denied")).to_have_text(
        "Permission denied: this token may not read variable app/secret in namespace default.", timeout=DEADLINE_MS
    )
    expect(page.locator("#var-form")).to_be_hidden()
    assert "v" not in page.locator("#var-items").inner_text()
    page.goto(f"{stack.base}/ui/variables")
    expect(page.locator("#variables tbody")).to_contain_text("No variables.", timeout=DEADLINE_MS)  # none listable


WEB_TASK = {
    "Name": "srv",
    "Driver": "raw_exec",
    "Config": {"command": sys.executable, "args": ["-m", "http.server", "${NOMAD_PORT_http}"]},
    "Resources": {"CPU": 20, "MemoryMB": 64},
}
WEB_SERVICE = {
    "Name": "web",
    "Provider": "nomad",
    "PortLabel": "http",
    "Tags": ["ui-test"],
    "Checks": [{"Name": "alive", "Type": "http", "Path": "/", "Interval": 1_000_000_000, "Timeout": 1_000_000_000}],
}


def test_services_and_their_instances_with_checks(stack: StackCluster, open_page: PageFactory) -> None:
    spec = job("web", [WEB_TASK], count=2, Networks=[{"DynamicPorts": [{"Label": "http"}]}], Services=[WEB_SERVICE])
    assert stack.cluster.http.put("/v1/jobs", json={"Job": spec}, headers=stack.root).status_code == 200

    def instances() -> list[dict[str, Any]]:
        return list(stack.cluster.http.get("/v1/service/web", headers=stack.root).json())

    assert wait_for(lambda: len(_running(stack, "web")) == 2 and len(instances()) == 2, 120)
    page = open_page(f"{stack.base}/ui/services", name="services")
    sign_in(page, stack.reader)
    services = page.locator("#services tbody")
    expect(services).to_contain_text("ui-test", timeout=DEADLINE_MS)
    services.get_by_role("link", name="web").click()
    page.wait_for_url("**/ui/service/web?namespace=default", timeout=DEADLINE_MS)
    rows = page.locator("#instances tbody tr")
    expect(rows).to_have_count(2, timeout=DEADLINE_MS)
    for reg in instances():
        expect(page.locator("#instances tbody")).to_contain_text(str(reg["Port"]))
        expect(page.locator("#instances tbody").get_by_role("link", name=reg["AllocID"][:8])).to_be_visible()
    expect(page.locator("#instances tbody", has_text="alive: success")).to_be_visible(timeout=DEADLINE_MS)
    expect(page.locator("#service-counts")).to_contain_text("Checks passing2", timeout=DEADLINE_MS)


def test_the_exec_terminal_runs_a_command_in_a_task(stack: StackCluster, open_page: PageFactory) -> None:
    task = {
        "Name": "t",
        "Driver": "raw_exec",
        "Config": {"command": "/bin/sh", "args": ["-c", "exec sleep 600"]},
        "Resources": {"CPU": 20, "MemoryMB": 16},
    }
    assert stack.cluster.http.put("/v1/jobs", json={"Job": job("shell", [task])}, headers=stack.root).status_code == 200
    assert wait_for(lambda: len(_running(stack, "shell")) == 1, 60)
    (alloc,) = _running(stack, "shell")
    page = open_page(f"{stack.base}/ui/allocation/{alloc['ID']}", name="exec")
    sign_in(page, stack.management)
    expect(page.locator("#exec-section")).to_be_visible(timeout=DEADLINE_MS)
    page.get_by_label("Command").fill("echo hi")
    page.get_by_role("button", name="Connect").click()
    expect(page.locator("#exec-screen")).to_have_text("hi\n", timeout=DEADLINE_MS)
    expect(page.locator("#exec-status")).to_have_text("Exited with code 0.", timeout=DEADLINE_MS)

    # A session reading its input: a line typed is the command's stdin.
    page.get_by_label("Command").fill("read line; echo got:$line")
    page.get_by_role("button", name="Connect").click()
    expect(page.locator("#exec-input")).to_be_enabled(timeout=DEADLINE_MS)
    page.get_by_label("Input").fill("typed")
    page.get_by_role("button", name="Send").click()
    expect(page.locator("#exec-screen")).to_contain_text("got:typed", timeout=DEADLINE_MS)
    expect(page.locator("#exec-status")).to_have_text("Exited with code 0.", timeout=DEADLINE_MS)


def test_the_exec_terminal_shows_a_refusal(stack: StackCluster, open_page: PageFactory) -> None:
    (alloc,) = _running(stack, "shell")
    page = open_page(f"{stack.base}/ui/allocation/{alloc['ID']}", name="exec-denied")
    sign_in(page, stack.reader)  # read-job, no alloc-exec
    expect(page.locator("#exec-section")).to_be_visible(timeout=DEADLINE_MS)
    page.get_by_label("Command").fill("echo hi")
    page.get_by_role("button", name="Connect").click()
    expect(page.locator("#exec-status")).to_have_text("Refused: Permission denied", timeout=DEADLINE_MS)
    expect(page.locator("#exec-screen")).to_have_text("")
