"""The template manager against a fake blocking-query source: first render before start
(waiting for missing data), files with perms, env templates, re-render on change and each
change_mode, splay, wait, and failures."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from client.templating.http_source import HttpSource
from client.templating.manager import TemplateFailed, TemplateManager, _Entry
from client.templating.spec import ChangeScript, TemplateSpec
from tests.support.processes import wait_for
from tests.support.template_sources import FakeSource, RecordingControl, Store, nomad_http

pytestmark = pytest.mark.unit

GREETING = '{{ with nomadVar "nomad/jobs/web" }}greeting={{ .greeting }}{{ end }}\n'


@pytest.fixture
def store() -> Store:
    store = Store()
    store.put_var("nomad/jobs/web", {"greeting": "hello", "other": "1"})
    return store


@pytest.fixture
def task_dir(tmp_path: Path) -> Path:
    path = tmp_path / "alloc1" / "web"
    (path / "local").mkdir(parents=True)
    return path


class Harness:
    def __init__(self, task_dir: Path, store: Store) -> None:
        self.task_dir, self.store = task_dir, store
        self.control = RecordingControl()
        self.splays: list[float] = []
        self.managers: list[TemplateManager] = []

    def manager(self, *specs: TemplateSpec, source: Any = None, env: dict[str, str] | None = None) -> TemplateManager:
        manager = TemplateManager(
            specs,
            self.task_dir,
            env or {"NOMAD_ALLOC_ID": "a-1"},
            source or FakeSource(self.store),
            self.control,
            wait_s=5,
            splay=self._splay,
        )
        self.managers.append(manager)
        return manager

    def _splay(self, most: float) -> float:
        self.splays.append(most)
        return 0.0

    def started(self, *specs: TemplateSpec) -> TemplateManager:
        manager = self.manager(*specs)
        assert manager.prestart(threading.Event())
        return manager

    def read(self, dest: str = "local/app.conf") -> str:
        return (self.task_dir / dest).read_text()


@pytest.fixture
def harness(task_dir: Path, store: Store) -> Iterator[Harness]:
    harness = Harness(task_dir, store)
    yield harness
    for manager in harness.managers:
        manager.stop()
        manager.cache.join(10)


def spec(**fields: Any) -> TemplateSpec:
    return TemplateSpec(**{"dest_path": "local/app.conf", "embedded": GREETING, "splay_s": 0.0, **fields})


def test_first_render_writes_the_file_with_perms(harness: Harness) -> None:
    harness.started(spec(perms=0o600, embedded='{{ env "NOMAD_ALLOC_ID" }} ' + GREETING))
    assert harness.read() == "a-1 greeting=hello\n"
    assert stat.S_IMODE((harness.task_dir / "local/app.conf").stat().st_mode) == 0o600


def test_uid_and_gid_are_applied(harness: Harness) -> None:
    harness.started(spec(uid=os.getuid(), gid=os.getgid()))
    info = (harness.task_dir / "local/app.conf").stat()
    assert (info.st_uid, info.st_gid) == (os.getuid(), os.getgid())


def test_env_template_feeds_the_environment(harness: Harness) -> None:
    text = 'GREETING={{ with nomadVar "nomad/jobs/web" }}{{ .greeting }}{{ end }}\n# c\nexport B="x y"\n'
    manager = harness.started(spec(dest_path="secrets/app.env", embedded=text, env=True))
    assert manager.env() == {"GREETING": "hello", "B": "x y"}


def test_bad_env_file_fails_the_task(harness: Harness) -> None:
    manager = harness.manager(spec(embedded="not a pair\n", env=True))
    with pytest.raises(TemplateFailed, match="environment variables: line 1"):
        manager.prestart(threading.Event())


def test_prestart_waits_for_a_missing_variable(harness: Harness, store: Store) -> None:
    manager = harness.manager(spec(embedded='{{ with nomadVar "nomad/jobs/new" }}{{ .k }}{{ end }}'))
    done = threading.Event()

    def prestart() -> None:
        if manager.prestart(threading.Event()):
            done.set()

    thread = threading.Thread(target=prestart)
    thread.start()
    assert harness.control.wait_for("event") == ["Template: Missing: nomad.var.block(nomad/jobs/new)"]
    assert not done.is_set() and not (harness.task_dir / "local/app.conf").exists()
    store.put_var("nomad/jobs/new", {"k": "v"})
    thread.join(20)
    assert done.is_set() and harness.read() == "v"


def test_prestart_returns_false_when_stopped_while_waiting(harness: Harness) -> None:
    manager = harness.manager(spec(embedded='{{ with nomadVar "nope" }}{{ end }}'))
    stopped = threading.Event()
    threading.Timer(0.2, stopped.set).start()
    assert manager.prestart(stopped) is False


def test_prestart_retries_an_unreachable_source(harness: Harness, store: Store) -> None:
    source = FakeSource(store)
    source.fail_next = 2
    manager = harness.manager(spec(), source=source)
    assert manager.prestart(threading.Event())
    assert harness.read() == "greeting=hello\n"


def test_a_change_re_renders_and_restarts(harness: Harness, store: Store) -> None:
    manager = harness.started(spec(change_mode="restart", splay_s=3.0))
    store.put_var("nomad/jobs/web", {"greeting": "bonjour", "other": "1"})
    assert harness.control.wait_for("restart") == ["Template with change_mode restart re-rendered"]
    assert harness.read() == "greeting=bonjour\n"
    assert harness.splays == [3.0]  # splay: a random delay up to the template's splay
    assert manager.renders == 1


def test_unused_change_does_not_act(harness: Harness, store: Store) -> None:
    manager = harness.started(spec(change_mode="restart"))
    store.put_var("nomad/jobs/web", {"greeting": "hello", "other": "2"})  # output unchanged
    store.put_var("nomad/jobs/web", {"greeting": "hola", "other": "2"})
    assert harness.control.wait_for("restart") == ["Template with change_mode restart re-rendered"]
    assert manager.renders == 1


def test_signal_mode(harness: Harness, store: Store) -> None:
    harness.started(spec(change_mode="signal", change_signal="SIGHUP"))
    store.put_var("nomad/jobs/web", {"greeting": "ciao"})
    assert harness.control.wait_for("signal") == ["SIGHUP"]
    assert harness.control.of("restart") == []


def test_restart_wins_over_signal(harness: Harness, store: Store) -> None:
    harness.started(
        spec(change_mode="signal", change_signal="SIGHUP"),
        spec(dest_path="local/b.conf", change_mode="restart"),
    )
    store.put_var("nomad/jobs/web", {"greeting": "ciao"})
    assert harness.control.wait_for("restart")
    assert harness.control.of("signal") == []


def test_script_mode_success_and_failure(harness: Harness, store: Store) -> None:
    script = ChangeScript("/bin/reload", ("-q",), 5.0, fail_on_error=False)
    harness.started(spec(change_mode="script", change_script=script))
    store.put_var("nomad/jobs/web", {"greeting": "a"})
    assert harness.control.wait_for("script") == ["/bin/reload"]
    assert harness.control.wait_for("event")[-1].startswith("Task hook message: Template successfully ran script")
    harness.control.script_code = 3
    store.put_var("nomad/jobs/web", {"greeting": "b"})
    events = harness.control.wait_for("event", 2)
    assert events[-1].startswith("Task hook failed: Template ran script /bin/reload with arguments ['-q']")
    assert harness.control.of("fail") == []


def test_script_failure_with_fail_on_error_fails_the_task(harness: Harness, store: Store) -> None:
    harness.control.script_code = 1
    harness.started(spec(change_mode="script", change_script=ChangeScript("/bin/x", (), 5.0, fail_on_error=True)))
    store.put_var("nomad/jobs/web", {"greeting": "a"})
    assert "exited with code: 1" in harness.control.wait_for("fail")[0]


def test_noop_rewrites_the_file_only(harness: Harness, store: Store) -> None:
    manager = harness.started(spec(change_mode="noop"))
    store.put_var("nomad/jobs/web", {"greeting": "noop"})
    assert wait_for(lambda: manager.renders == 1, 20)
    assert harness.read() == "greeting=noop\n"
    assert [k for k, _ in harness.control.calls] == []


def test_env_is_reloaded_after_a_change(harness: Harness, store: Store) -> None:
    text = 'G={{ with nomadVar "nomad/jobs/web" }}{{ .greeting }}{{ end }}\n'
    manager = harness.started(spec(dest_path="local/e.env", embedded=text, env=True))
    store.put_var("nomad/jobs/web", {"greeting": "later"})
    harness.control.wait_for("restart")
    assert manager.env() == {"G": "later"}


def test_services_are_watched(harness: Harness, store: Store) -> None:
    text = '{{ range nomadService "db" }}{{ .Address }}:{{ .Port }} {{ end }}'
    harness.started(spec(embedded=text))
    assert harness.read() == ""
    store.put_service("db", [{"ID": "1", "Address": "10.0.0.5", "Port": 5432}])
    harness.control.wait_for("restart")
    assert harness.read() == "10.0.0.5:5432 "


def test_a_template_error_at_re_render_fails_the_task(harness: Harness, store: Store) -> None:
    text = '{{ with nomadVar "nomad/jobs/web" }}{{ (parseJSON .greeting.Value).x }}{{ end }}'
    store.put_var("nomad/jobs/web", {"greeting": '{"x": 1}'})
    harness.started(spec(embedded=text))
    assert harness.read() == "1"
    store.put_var("nomad/jobs/web", {"greeting": "not json"})
    assert "Template failed: template: local/app.conf:1:" in harness.control.wait_for("fail")[0]


def test_parse_errors_fail_before_start(harness: Harness) -> None:
    manager = harness.manager(spec(embedded="{{ if }}"))
    with pytest.raises(TemplateFailed, match=r"local/app.conf:1:7: missing value for if"):
        manager.prestart(threading.Event())


def test_source_path_is_read_from_the_task_dir(harness: Harness) -> None:
    (harness.task_dir / "local/in.tpl").write_text("from file {{ 1 }}")
    harness.started(spec(embedded="", source_path="local/in.tpl"))
    assert harness.read() == "from file 1"


def test_destination_through_a_symlink_out_of_the_alloc_dir_is_refused(harness: Harness, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (harness.task_dir / "local/link").symlink_to(outside)
    manager = harness.manager(spec(dest_path="local/link/app.conf"))
    with pytest.raises(TemplateFailed, match="escapes alloc directory"):
        manager.prestart(threading.Event())
    assert not (outside / "app.conf").exists()


def test_custom_delimiters_and_missing_key(harness: Harness) -> None:
    harness.started(spec(embedded='[[ env "NOMAD_ALLOC_ID" ]] {{ x }}', left="[[", right="]]"))
    assert harness.read() == "a-1 {{ x }}"


def test_wait_bounds_decide_when_a_change_renders() -> None:
    entry = _Entry(spec(wait_min_s=2.0, wait_max_s=5.0), Path("x"))
    assert entry.due(0.0) is None
    entry.first_change, entry.last_change = 10.0, 10.0
    assert entry.due(10.0) == 12.0  # quiet for min
    entry.last_change = 14.5
    assert entry.due(14.5) == 15.0  # but never later than first change + max
    plain = _Entry(spec(), Path("x"))
    plain.first_change = plain.last_change = 3.0
    assert plain.due(3.0) == 3.0


def test_wait_min_renders_after_the_quiet_time(harness: Harness, store: Store) -> None:
    manager = harness.started(spec(wait_min_s=0.2, wait_max_s=1.0, change_mode="noop"))
    store.put_var("nomad/jobs/web", {"greeting": "w1"})
    store.put_var("nomad/jobs/web", {"greeting": "w2"})
    assert wait_for(lambda: harness.read() == "greeting=w2\n", 20)
    assert wait_for(lambda: manager.renders >= 1, 20)  # counted just after the file is written


def test_http_source_against_nomads_routes(harness: Harness, store: Store) -> None:
    store.put_service("web", [{"ID": "s1", "Address": "10.1.0.1", "Port": 80, "Tags": ["a"]}])
    text = (
        GREETING
        + '{{ range nomadService "web" }}{{ .Address }}:{{ .Port }}{{ .Tags }}{{ end }}\n'
        + "{{ range nomadServices }}{{ .Name }}{{ end }} {{ range nomadVarList }}{{ .Path }}{{ end }}"
        + ' {{ nomadVarExists "nope" }}'
    )
    with nomad_http(store) as (address, tokens):
        source = HttpSource(address, lambda: "node-secret")
        try:
            assert harness.manager(spec(embedded=text), source=source).prestart(threading.Event())
            assert harness.read() == "greeting=hello\n10.1.0.1:80[a]\nweb nomad/jobs/web false"
            store.put_var("nomad/jobs/web", {"greeting": "over http"})
            harness.control.wait_for("restart")
            assert harness.read().startswith("greeting=over http\n")
            assert set(tokens) == {"node-secret"}
        finally:
            for manager in harness.managers:
                manager.stop()
            source.close()
