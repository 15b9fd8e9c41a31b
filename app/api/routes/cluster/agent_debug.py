"""Nomad's agent introspection routes on an API server: /v1/agent/monitor streams this server's
log lines at a chosen level, /v1/agent/host describes its host (Nomad's HostData),
/v1/agent/pprof/cmdline gives its command line as Go's pprof does, and the other pprof routes,
/v1/agent/monitor/export and /v1/agent/reload answer 501 naming what corral offers instead (a Go
profiler has no meaning for a Python process; a server writes no log file; its settings are its
CORRAL_* environment, read once at start)."""

from __future__ import annotations

import base64
import json
import os
import platform
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
from flask import Blueprint, Response, request

from app.api.http import log_monitor
from app.api.http.context import respond, state
from app.api.http.hangups import Caller
from app.api.http.params import arg, bool_arg
from app.values.errors import DoneElsewhere, InvalidInput
from app.wire.json import JsonObject, JsonValue

bp = Blueprint("agent_debug", __name__)
HEARTBEAT_S = 10.0
WAIT_S = 0.5
# Environment values that are credentials: HostData shows their names only.
SECRET_WORDS = ("TOKEN", "SECRET", "PASSWORD", "PASSWD", "KEY", "CREDENTIAL", "DATABASE_URL", "DSN", "AUTH")
PPROF_INSTEAD = (
    "corral is a Python program: Go's pprof profiles do not exist here. Profile a process with "
    "py-spy (`py-spy record --pid <pid>` or `py-spy dump --pid <pid>`), read its runtime figures "
    "(nomad.runtime.*) and the scheduler timers at /v1/metrics, and its log at /v1/agent/monitor."
)

EXPORT_INSTEAD = (
    "a corral server writes no log file: its log goes to stderr (where the service manager keeps it, "
    "e.g. `journalctl -u corral-server`); stream it live with /v1/agent/monitor (`corral monitor`)"
)
RELOAD_INSTEAD = (
    "a corral server's settings are its CORRAL_* environment, read once at start: change them and "
    "restart the process (servers are stateless; start the new one before stopping the old)"
)


@bp.get("/agent/monitor")
def monitor() -> Response:
    """?log_level= (trace, debug, info, warn, error; default info), ?log_json=, ?plain=: as
    Nomad's, a stream of {"Data": base64} frames (plain: the lines themselves) until the caller
    hangs up. A client's or another server's log (node_id, server_id) is not forwarded."""
    raw_level = arg("log_level") or "info"
    level = log_monitor.level_number(raw_level)
    if level is None:
        raise InvalidInput.of("log_level", f"Unknown log level: {raw_level}")
    json_lines, plain = bool_arg("log_json"), bool_arg("plain")
    for field in ("node_id", "server_id"):
        if arg(field):
            raise InvalidInput.of(field, "only the answering server's own log is streamed; ask that server")
    gone = state().hangups.caller(request.environ.get("gunicorn.socket"))
    body = _frames(level, json_lines, plain, gone)
    content_type = "text/plain; charset=utf-8" if plain else "application/json"
    return Response(body, content_type=content_type, headers={"Cache-Control": "no-cache"})


def _frames(level: int, json_lines: bool, plain: bool, gone: Caller) -> Iterator[bytes]:
    with log_monitor.subscribed(level, json_lines) as subscription:
        yield b"" if plain else b"{}"  # the response is open: headers go out now
        next_beat = time.monotonic() + HEARTBEAT_S
        while not gone():
            text = subscription.take(WAIT_S)
            if text:
                yield text.encode() if plain else _frame(text)
                next_beat = time.monotonic() + HEARTBEAT_S
            elif time.monotonic() >= next_beat and not plain:
                yield b"{}"  # Nomad's heartbeat frame; a write to a closed connection ends the stream
                next_beat = time.monotonic() + HEARTBEAT_S


def _frame(text: str) -> bytes:
    return json.dumps({"Data": base64.b64encode(text.encode()).decode()}).encode()


@bp.get("/agent/host")
def host() -> Response:
    """Nomad's HostData for this server's host: uname, network interfaces, resolv.conf,
    /etc/hosts, the process environment (credentials reduced to their names) and disk usage."""
    for field in ("node_id", "server_id"):
        if arg(field):
            raise InvalidInput.of(field, "only the answering server's own host is described; ask that server")
    return respond(host_data(), 0)


def host_data() -> JsonObject:
    uname = platform.uname()
    return {
        "OS": f"{uname.system} {uname.node} {uname.release} {uname.version} {uname.machine}",
        "Network": _network(),
        "ResolvConf": _slurp(Path("/etc/resolv.conf")),
        "Hosts": _slurp(Path("/etc/hosts")),
        "Environment": {k: _redacted(k, v) for k, v in sorted(os.environ.items())},
        "Disk": _disks(),
    }


def _redacted(name: str, value: str) -> str:
    return "<redacted>" if any(word in name.upper() for word in SECRET_WORDS) else value


def _slurp(path: Path) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError:
        return ""


def _network() -> list[JsonValue]:
    """One entry per interface address, as Nomad's host.network (interface, address, mask)."""
    entries: list[JsonValue] = []
    for name, addresses in sorted(psutil.net_if_addrs().items()):
        for address in addresses:
            if address.family.name in ("AF_INET", "AF_INET6"):
                entries.append({"interface": name, "address": address.address, "netmask": address.netmask or ""})
    return entries


def _disks() -> JsonObject:
    usage: JsonObject = {}
    for part in psutil.disk_partitions(all=False):
        try:
            figures = psutil.disk_usage(part.mountpoint)
        except OSError:
            continue
        usage[part.mountpoint] = {"DiskMB": figures.total // 2**20, "UsedMB": (figures.total - figures.free) // 2**20}
    return usage


@bp.get("/agent/monitor/export")
def monitor_export() -> Response:
    raise DoneElsewhere.of("monitor export", EXPORT_INSTEAD)


@bp.route("/agent/reload", methods=["PUT", "POST"])
def reload() -> Response:
    raise DoneElsewhere.of("reload", RELOAD_INSTEAD)


@bp.get("/agent/pprof/cmdline")
def pprof_cmdline() -> Response:
    """This process's command line, its arguments separated by NUL bytes (Go's pprof.Cmdline)."""
    for field in ("node_id", "server_id"):
        if arg(field):
            raise InvalidInput.of(field, "only the answering server's own command line is given; ask that server")
    body = "\x00".join(sys.argv)
    return Response(body, content_type="text/plain; charset=utf-8", headers={"X-Content-Type-Options": "nosniff"})


@bp.get("/agent/pprof/", defaults={"profile": ""})
@bp.get("/agent/pprof/profile", defaults={"profile": "profile"})  # Nomad's named routes, for the route table
@bp.get("/agent/pprof/trace", defaults={"profile": "trace"})
@bp.get("/agent/pprof/<path:profile>")
def pprof(profile: str) -> Response:
    return Response(
        json.dumps({"error": f"/v1/agent/pprof/{profile} is not served: {PPROF_INSTEAD}"}),
        status=501,
        content_type="application/json",
    )
