"""Template re-render latency: from a variable's change on the servers to the re-rendered file
on disk, through the client's template manager (a blocking-query watcher over HTTP, the Go
template engine, the atomic write), against a loopback server with Nomad's /v1/var routes.
Peers in the same run: the bare blocking-query round trip (the same change seen by a plain
HTTP client waiting on ?index=), and rendering equivalent text with Python's string.Template.

Usage: uv run python -m bench.template_render [changes]
"""

from __future__ import annotations

import statistics
import string
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from client.template import Template
from client.templating.http_source import HttpSource
from client.templating.manager import TemplateManager
from client.templating.spec import TemplateSpec
from tests.support.template_sources import RecordingControl, Store, nomad_http

TEXT = """# rendered for {{ env "NOMAD_ALLOC_ID" }}
{{ with nomadVar "nomad/jobs/web" -}}
greeting = "{{ .greeting }}"
{{ range $k, $v := . }}{{ $k }} = {{ $v | toUpper }}
{{ end }}{{ end -}}
upstreams = [{{ range $i, $s := nomadService "db" }}{{ if $i }}, {{ end }}"{{ .Address }}:{{ .Port }}"{{ end }}]
"""
PEER = string.Template('# rendered for $alloc\ngreeting = "$greeting"\n$items\nupstreams = [$upstreams]\n')
ITEMS = {f"key{i}": f"value{i}" for i in range(10)}


def percentiles(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def manager_latency(address: str, store: Store, changes: int, task_dir: Path) -> list[float]:
    spec = TemplateSpec(dest_path="local/app.conf", embedded=TEXT, change_mode="noop", splay_s=0.0)
    source = HttpSource(address, lambda: "")
    manager = TemplateManager([spec], task_dir, {"NOMAD_ALLOC_ID": "bench"}, source, RecordingControl())
    assert manager.prestart(threading.Event())
    samples = []
    try:
        for i in range(changes):
            before = manager.renders

            def rendered(before: int = before) -> bool:
                return manager.renders > before

            began = time.perf_counter()
            store.put_var("nomad/jobs/web", {**ITEMS, "greeting": f"hello {i}"})
            with manager.rendered:
                manager.rendered.wait_for(rendered, 30)
            samples.append(time.perf_counter() - began)
            assert f'greeting = "hello {i}"' in (task_dir / "local/app.conf").read_text()
    finally:
        manager.stop()
        source.close()
    return samples


def round_trip_latency(address: str, store: Store, changes: int) -> list[float]:
    """The same change seen by a bare blocking query (no template work at all)."""
    seen = threading.Condition()
    state = {"index": 0, "stop": False}

    def watch() -> None:
        with httpx.Client(base_url=address) as http:
            index = int(http.get("/v1/var/nomad/jobs/web").headers["X-Nomad-Index"])
            with seen:
                state["index"] = index
                seen.notify_all()
            while not state["stop"]:
                reply = http.get("/v1/var/nomad/jobs/web", params={"index": index, "wait": "30s"}, timeout=40)
                index = int(reply.headers["X-Nomad-Index"])
                with seen:
                    state["index"] = index
                    seen.notify_all()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    with seen:
        seen.wait_for(lambda: state["index"] > 0, 30)  # the watcher holds its first index
    samples = []
    for i in range(changes):
        began = time.perf_counter()
        target = store.put_var("nomad/jobs/web", {**ITEMS, "greeting": f"peer {i}"})

        def reached(target: int = target) -> bool:
            return state["index"] >= target

        with seen:
            seen.wait_for(reached, 30)
        samples.append(time.perf_counter() - began)
    state["stop"] = True
    store.put_var("nomad/jobs/web", {"greeting": "done"})
    thread.join(10)
    return samples


def render_costs(runs: int) -> tuple[list[float], list[float]]:
    class Data:
        def variable(self, path: str) -> dict[str, str]:
            return {**ITEMS, "greeting": "hi"}

        def variables(self, prefix: str) -> list[object]:
            return []

        def service(self, name: str) -> list[object]:
            return []

        def services(self) -> list[object]:
            return []

    template = Template.parse("bench", TEXT)
    ours, peer = [], []
    for _ in range(runs):
        began = time.perf_counter()
        template.render(Data(), {"NOMAD_ALLOC_ID": "bench"})  # type: ignore[arg-type]  # structural Data
        ours.append(time.perf_counter() - began)
        began = time.perf_counter()
        items = "\n".join(f"{k} = {v.upper()}" for k, v in sorted({**ITEMS, "greeting": "hi"}.items()))
        PEER.substitute(alloc="bench", greeting="hi", items=items, upstreams="")
        peer.append(time.perf_counter() - began)
    return ours, peer


def main() -> None:
    changes = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    store = Store()
    store.put_var("nomad/jobs/web", {**ITEMS, "greeting": "start"})
    store.put_service("db", [{"ID": "1", "Address": "10.0.0.9", "Port": 5432}])
    with nomad_http(store) as (address, _), tempfile.TemporaryDirectory() as tmp:
        task_dir = Path(tmp) / "alloc" / "web"
        task_dir.mkdir(parents=True)
        ours = manager_latency(address, store, changes, task_dir)
        bare = round_trip_latency(address, store, changes)
    render, peer_render = render_costs(changes)
    ours_p50, ours_p99 = percentiles(ours)
    bare_p50, bare_p99 = percentiles(bare)
    print(f"changes: {changes} (variable write -> file re-rendered, HTTP blocking queries on loopback)")
    print(f"template re-render latency   p50 {ours_p50 * 1e3:7.2f} ms   p99 {ours_p99 * 1e3:7.2f} ms")
    print(f"bare blocking-query round trip p50 {bare_p50 * 1e3:5.2f} ms   p99 {bare_p99 * 1e3:7.2f} ms")
    print(f"ratio re-render / round trip: p50 {ours_p50 / bare_p50:.2f}x  p99 {ours_p99 / bare_p99:.2f}x")
    r50, p50 = statistics.median(render), statistics.median(peer_render)
    print(f"render only: Go template {r50 * 1e6:.1f} us, string.Template peer {p50 * 1e6:.1f} us ({r50 / p50:.1f}x)")


if __name__ == "__main__":
    main()
