"""`corral operator debug`: Nomad's debug bundle, a tar.gz of the cluster's state, the server's
log and metrics over a span of time, for a bug report. The layout follows Nomad's where it has a
meaning here:

    corral-debug-<time>/cluster/{agent-self,members,namespaces,regions,leader}.json
    corral-debug-<time>/server/<server>/{agent-host.json,monitor.log}
    corral-debug-<time>/client/<node id>/{node.json,host-stats.json,node-metadata.json}
    corral-debug-<time>/interval/<NNNN>/{jobs,allocations,evaluations,deployments,nodes,metrics,
                                          operator-scheduler}.json    (one directory per -interval)

Everything comes from the REST API with the caller's token; a read that fails is written as
{"error": ...} in its file rather than stopping the capture. The server's log is the answering
API server's own (/v1/agent/monitor), as `corral monitor` streams it."""

from __future__ import annotations

import io
import json
import tarfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import click

from app.cli.agent_monitor import FrameDecoder
from app.cli.support import http
from app.wire.json import JsonValue

NANOS = 1_000_000_000
CLUSTER = {
    "agent-self": "/v1/agent/self",
    "members": "/v1/agent/members",
    "namespaces": "/v1/namespaces",
    "regions": "/v1/regions",
    "leader": "/v1/status/leader",
}
INTERVAL = {
    "jobs": ("/v1/jobs", {"namespace": "*"}),
    "allocations": ("/v1/allocations", {"namespace": "*"}),
    "evaluations": ("/v1/evaluations", {"namespace": "*"}),
    "deployments": ("/v1/deployments", {"namespace": "*"}),
    "nodes": ("/v1/nodes", {}),
    "metrics": ("/v1/metrics", {}),
    "operator-scheduler": ("/v1/operator/scheduler/configuration", {}),
}


def _seconds(raw: str, flag: str) -> float:
    # Here, not at the top: app.jobspec loads the HCL parser, which the CLI must not pay for
    # at start (tests/unit/test_cli_imports.py).
    from app.jobspec.durations import DurationError, duration_ns

    try:
        return duration_ns(raw) / NANOS
    except DurationError as err:
        raise click.BadParameter(str(err), param_hint=flag) from None


class Bundle:
    """The archive's files, kept in memory until it is written."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.files: dict[str, bytes] = {}

    def add(self, path: str, data: bytes) -> None:
        self.files[f"{self.root}/{path}"] = data

    def add_json(self, path: str, fetch: Callable[[], JsonValue]) -> None:
        try:
            value = fetch()
        except http.ApiError as err:
            value = {"error": str(err)}
        self.add(path, json.dumps(value, indent=2).encode() + b"\n")

    def write(self, target: Path) -> None:
        with tarfile.open(target, "w:gz") as archive:
            for name, data in sorted(self.files.items()):
                info = tarfile.TarInfo(name)
                info.size, info.mtime, info.mode = len(data), int(time.time()), 0o600
                archive.addfile(info, io.BytesIO(data))


class LogCapture:
    """The server's log lines at `level`, streamed in a daemon thread until stop()."""

    def __init__(self, level: str) -> None:
        self.lines: list[str] = []
        self.error = ""
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, args=(level,), name="debug-monitor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self, level: str) -> None:
        decoder = FrameDecoder()
        try:
            for chunk in http.stream_text("/v1/agent/monitor", {"log_level": level}):
                with self._lock:
                    self.lines.extend(decoder.feed(chunk))
                if self._stop.is_set():
                    return
        except http.ApiError as err:
            self.error = str(err)

    def stop(self) -> bytes:
        """What was captured so far (the stream ends at its next frame, within a heartbeat)."""
        self._stop.set()
        self._thread.join(timeout=1.0)
        with self._lock:
            text = "".join(self.lines)
        if self.error:
            text += f"[ERROR] operator debug: the log could not be streamed: {self.error}\n"
        return text.encode()


def _ids(raw: str, known: list[str]) -> list[str]:
    """Nomad's -node-id: 'all', or comma-separated IDs or unique prefixes of them."""
    if not raw:
        return []
    if raw == "all":
        return known
    chosen: list[str] = []
    for prefix in filter(None, (p.strip() for p in raw.split(","))):
        matches = [k for k in known if k.startswith(prefix)]
        if len(matches) != 1:
            raise click.BadParameter(f"{prefix!r} matches {len(matches)} nodes", param_hint="-node-id")
        chosen.append(matches[0])
    return chosen


@click.command("debug")
@click.option("-duration", "--duration", default="2m", show_default=True, help="How long to capture (Go duration).")
@click.option("-interval", "--interval", default="30s", show_default=True, help="Time between state captures.")
@click.option("-log-level", "--log-level", "log_level", default="trace", show_default=True, help="Server log level.")
@click.option("-node-id", "--node-id", "node_id", default="", help="Nodes to describe: comma-separated IDs or 'all'.")
@click.option(
    "-server-id", "--server-id", "server_id", default="all", show_default=True, help="Servers ('all', 'leader')."
)
@click.option(
    "-output", "--output", "output", default=".", type=click.Path(file_okay=False), help="Directory to write to."
)
def debug(duration: str, interval: str, log_level: str, node_id: str, server_id: str, output: str) -> None:
    """Capture the cluster's state, the server's log and metrics into a tar.gz for a bug report."""
    span, step = _seconds(duration, "-duration"), _seconds(interval, "-interval")
    if step <= 0 or step > span > 0:
        raise click.BadParameter("must be more than 0 and at most -duration", param_hint="-interval")
    stamp = datetime.now(UTC).strftime("%Y-%m-%d-%H%M%SZ")
    bundle = Bundle(f"corral-debug-{stamp}")
    self_info = http.get("/v1/agent/self")
    server = str(self_info.get("member", {}).get("Name") or "server") if isinstance(self_info, dict) else "server"
    if server_id not in ("all", "leader", server):
        raise click.BadParameter(
            f"the answering server is {server!r}: give 'all', 'leader' or that", param_hint="-server-id"
        )
    nodes = [str(n["ID"]) for n in http.get("/v1/nodes") if isinstance(n, dict)]
    chosen = _ids(node_id, nodes)
    click.echo("Starting debugger...\n")
    click.echo(f"      Servers: (1) [{server}]")
    click.echo(f"      Clients: ({len(chosen)}) [{', '.join(chosen)}]")
    click.echo(f"     Interval: {interval}")
    click.echo(f"     Duration: {duration}\n")
    log = LogCapture(log_level)
    log.start()
    click.echo("Capturing cluster data...")
    for name, route in CLUSTER.items():
        bundle.add_json(f"cluster/{name}.json", partial(http.get, route))
    bundle.add_json(f"server/{server}/agent-host.json", partial(http.get, "/v1/agent/host"))
    for node in chosen:
        base = f"client/{node}"
        bundle.add_json(f"{base}/node.json", partial(http.get, f"/v1/node/{node}"))
        bundle.add_json(f"{base}/host-stats.json", partial(http.get, "/v1/client/stats", {"node_id": node}))
        bundle.add_json(f"{base}/node-metadata.json", partial(http.get, "/v1/client/metadata", {"node_id": node}))
    began, captured = time.monotonic(), 0
    while True:
        click.echo(f"    Capture interval {captured:04d}")
        for name, (route, params) in INTERVAL.items():
            bundle.add_json(f"interval/{captured:04d}/{name}.json", partial(http.get, route, dict(params)))
        captured += 1
        wait = began + captured * step - time.monotonic()
        if time.monotonic() - began + max(wait, 0) >= span:
            break
        time.sleep(max(wait, 0))
    remaining = began + span - time.monotonic()
    if remaining > 0:
        time.sleep(remaining)  # the log keeps streaming for the whole duration
    bundle.add(f"server/{server}/monitor.log", log.stop())
    target = Path(output) / f"{bundle.root}.tar.gz"
    target.parent.mkdir(parents=True, exist_ok=True)
    bundle.write(target)
    click.echo(f"\nCreated debug archive: {target}")
