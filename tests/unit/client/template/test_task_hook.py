"""The template hook inside the allocation runner (mock driver, fake source): the task starts
only after its templates rendered, gets the env template's variables, is restarted (and
counted) when a change re-renders a restart-mode template, and fails on a bad template."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from client.allocs.alloc_runner import AllocRunner
from client.drivers import available
from client.tasks import task_state
from tests.support.processes import wait_for
from tests.support.template_sources import FakeSource, Store

pytestmark = pytest.mark.unit

ALLOC_ID = "a1b2c3d4-0000-0000-0000-000000000000"


def alloc(templates: list[dict[str, Any]]) -> dict[str, Any]:
    task = {
        "Name": "web",
        "Driver": "mock",
        "Config": {},
        "Env": {"FROM_JOB": "job", "SHARED": "job"},
        "Templates": templates,
        "RestartPolicy": {"Attempts": 0, "Interval": 60_000_000_000, "Delay": 0, "Mode": "fail"},
    }
    return {
        "ID": ALLOC_ID,
        "Name": "web.g[0]",
        "Namespace": "default",
        "TaskGroup": "g",
        "Job": {"ID": "web", "Type": "service", "TaskGroups": [{"Name": "g", "Tasks": [task]}]},
    }


def template(data: str, dest: str, **extra: Any) -> dict[str, Any]:
    return {"EmbeddedTmpl": data, "DestPath": dest, "ChangeMode": "restart", "Splay": 0, "Perms": "0644", **extra}


def start(tmp_path: Path, body: dict[str, Any], store: Store) -> AllocRunner:
    runner = AllocRunner(
        body, tmp_path / ALLOC_ID, available(("mock",)), lambda _: None, node={"Name": "n1"},
        template_source=lambda _alloc, _identity: FakeSource(store),
    )  # fmt: skip
    runner.start()
    return runner


def messages(runner: AllocRunner) -> list[tuple[str, str]]:
    return [(e["Type"], e["DisplayMessage"]) for e in runner.tasks["web"].state["Events"]]


def test_task_starts_after_render_with_template_env_and_restarts_on_change(tmp_path: Path) -> None:
    store = Store()
    body = alloc(
        [
            template('{{ with nomadVar "nomad/jobs/web" }}{{ .greeting }}{{ end }}', "local/app.conf"),
            template('SHARED=tmpl\nALLOC={{ env "NOMAD_ALLOC_ID" }}\n', "secrets/t.env", Envvars=True),
        ]
    )
    runner = start(tmp_path, body, store)
    try:
        task = runner.tasks["web"]
        assert wait_for(lambda: ("Template", "Missing: nomad.var.block(nomad/jobs/web)") in messages(runner), 20)
        assert task.state["State"] == "pending" and task.handle is None  # blocked in prestart
        store.put_var("nomad/jobs/web", {"greeting": "hello"})
        assert wait_for(lambda: task.state["State"] == "running", 20)
        assert (tmp_path / ALLOC_ID / "web/local/app.conf").read_text() == "hello"
        env = task.spec.env
        assert (env["SHARED"], env["FROM_JOB"], env["ALLOC"]) == ("tmpl", "job", ALLOC_ID)  # templates win

        store.put_var("nomad/jobs/web", {"greeting": "bonjour"})
        assert wait_for(lambda: task.state["Restarts"] == 1 and task.state["State"] == "running", 20)
        assert ("Restart Signaled", "Template with change_mode restart re-rendered") in messages(runner)
        assert (tmp_path / ALLOC_ID / "web/local/app.conf").read_text() == "bonjour"
        restarting = [e for e in task.state["Events"] if e["Type"] == "Restarting"]
        assert restarting[-1]["RestartReason"] == "Template with change_mode restart re-rendered"
    finally:
        runner.destroy()


def test_a_bad_template_fails_the_task_before_it_starts(tmp_path: Path) -> None:
    runner = start(tmp_path, alloc([template("{{ nope }}", "local/x")]), Store())
    try:
        assert wait_for(lambda: runner.terminal, 20), runner.update()
        state = runner.tasks["web"].state
        assert state["Failed"] is True and state["StartedAt"] == task_state.ZERO_TIME  # never started
        killing = [m for t, m in messages(runner) if t == "Killing"]
        assert killing == ['Template failed: template: local/x:1:4: function "nope" not defined']
        assert runner.client_status == "failed"
    finally:
        runner.destroy()
