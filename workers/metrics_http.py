"""A role's own /v1/metrics (worker, applier, leader): the timings it records in-process, served
on CORRAL_METRICS_BIND so Prometheus scrapes each process, wherever it runs. The API server's
/v1/metrics adds the cluster's gauges; these processes only report what happens inside them."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import structlog
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, generate_latest

from app.metrics import runtime
from app.metrics.aggregates import AGGREGATES, Aggregates
from app.metrics.intervals import reported_start
from app.metrics.nomad_json import IntervalView, to_nomad_json
from app.metrics.timings import COUNTERS, NOMAD_NAMES

log = structlog.get_logger(__name__)


class MetricsBindError(Exception):
    """CORRAL_METRICS_BIND is malformed or its port is taken."""


def own_interval(now: float, aggregates: Aggregates = AGGREGATES) -> IntervalView:
    """This process's last completed interval, as go-metrics' DisplayMetrics reports it (empty
    if nothing was observed in it)."""
    start = reported_start(now, settle_s=0.0)
    found = next((i.figures for i in aggregates.completed() if i.start == start), {})
    return IntervalView(start, found, COUNTERS)


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        url = urlsplit(self.path)
        wanted = parse_qs(url.query).get("format", ["json"])[0]
        if url.path == "/metrics" or (url.path == "/v1/metrics" and wanted == "prometheus"):
            self._send(200, CONTENT_TYPE_LATEST, generate_latest(REGISTRY))
        elif url.path == "/v1/metrics" and wanted == "json":
            now = datetime.now(UTC)
            body = to_nomad_json(REGISTRY.collect(), NOMAD_NAMES, now, interval=own_interval(now.timestamp()))
            self._send(200, "application/json", json.dumps(body).encode())
        elif url.path == "/v1/metrics":
            self._send(400, "text/plain", f"format: must be json or prometheus, got {wanted!r}\n".encode())
        else:
            self._send(404, "text/plain", b"only /v1/metrics and /metrics are served here\n")

    def _send(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        return  # scrapes every few seconds would drown the role's log


def serve_metrics(bind: str, role: str) -> ThreadingHTTPServer:
    """Serve in a daemon thread; raises MetricsBindError before the role starts any work."""
    runtime.install()
    host, sep, port = bind.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise MetricsBindError(f"CORRAL_METRICS_BIND {bind!r} must be host:port, e.g. 127.0.0.1:9101")
    try:
        server = ThreadingHTTPServer((host.strip("[]") or "0.0.0.0", int(port)), _Handler)
    except OSError as err:
        raise MetricsBindError(f"CORRAL_METRICS_BIND {bind!r}: {err.strerror or err}") from err
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()
    address, bound_port = server.server_address[:2]
    log.info("serving metrics", role=role, url=f"http://{address!s}:{bound_port}/v1/metrics")
    return server
