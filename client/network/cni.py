"""Calling CNI plugins as a container runtime does (what Nomad does through libcni): each
plugin of a network configuration list is run in turn with the CNI environment
(CNI_COMMAND, CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_PATH, CNI_ARGS) and its
configuration on stdin, the previous plugin's result passed on as `prevResult`, and
`runtimeConfig` filled in for the capabilities a plugin declares (portMappings). DEL runs
the list backwards with the result ADD returned, and goes on past a plugin that fails."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from app.wire.json import JsonObject, JsonValue

PLUGIN_TIMEOUT_S = 30.0
# Nomad's default is /opt/cni/bin; Debian's containernetworking-plugins install into /usr/lib/cni.
DEFAULT_CNI_PATH = (Path("/opt/cni/bin"), Path("/usr/lib/cni"))


class CniError(Exception):
    """A plugin failed (or is missing): its own message, as CNI's error result carries it."""


@dataclass(frozen=True)
class Attachment:
    """Where the plugins act: the container (Nomad: the allocation ID), its network namespace
    and the interface name inside it."""

    container_id: str
    netns: str
    ifname: str = "eth0"


def find_plugin(kind: str, path: Sequence[Path]) -> Path:
    for directory in path:
        candidate = directory / kind
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    raise CniError(f"CNI plugin {kind!r} not found in {':'.join(str(p) for p in path)}")


def _plugin_conf(
    conflist: JsonObject, plugin: JsonObject, runtime: JsonObject, previous: JsonObject | None
) -> JsonObject:
    conf: JsonObject = {**plugin, "name": conflist["name"], "cniVersion": conflist["cniVersion"]}
    capabilities = plugin.get("capabilities")
    if isinstance(capabilities, dict):
        wanted = {key: value for key, value in runtime.items() if capabilities.get(key) is True}
        if wanted:
            conf["runtimeConfig"] = wanted
    if previous is not None:
        conf["prevResult"] = previous
    return conf


def invoke(command: str, conf: JsonObject, where: Attachment, path: Sequence[Path]) -> JsonObject | None:
    """Run one plugin; its result (None when it printed none, as DEL does)."""
    kind = str(conf.get("type", ""))
    binary = find_plugin(kind, path)
    env = {
        "CNI_COMMAND": command,
        "CNI_CONTAINERID": where.container_id,
        "CNI_NETNS": where.netns,
        "CNI_IFNAME": where.ifname,
        "CNI_PATH": ":".join(str(p) for p in path),
        "CNI_ARGS": "IgnoreUnknown=true",
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",  # the plugins run iptables and friends
    }
    try:
        done = subprocess.run(
            [str(binary)], input=json.dumps(conf).encode(), env=env, capture_output=True, timeout=PLUGIN_TIMEOUT_S
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise CniError(f"CNI plugin {kind!r} ({command}): {err}") from err
    out = done.stdout.strip()
    try:
        answer: JsonValue = json.loads(out) if out else None
    except ValueError:
        answer = None
    if done.returncode != 0:
        raise CniError(f"CNI plugin {kind!r} ({command}) failed: {_message(answer, done.stderr)}")
    return answer if isinstance(answer, dict) else None


def _message(answer: JsonValue, stderr: bytes) -> str:
    if isinstance(answer, dict):
        parts = [str(answer.get(key)) for key in ("msg", "details") if answer.get(key)]
        if parts:
            return ": ".join(parts)
    return stderr.decode(errors="replace").strip() or "no message"


def add(conflist: JsonObject, where: Attachment, runtime: JsonObject, path: Sequence[Path]) -> JsonObject:
    """ADD every plugin of the list in order; the last result (the attachment's addresses)."""
    result: JsonObject | None = None
    for plugin in _plugins(conflist):
        result = invoke("ADD", _plugin_conf(conflist, plugin, runtime, result), where, path) or result
    return result or {}


def delete(
    conflist: JsonObject, where: Attachment, runtime: JsonObject, path: Sequence[Path], result: JsonObject | None
) -> list[str]:
    """DEL every plugin of the list in reverse order with ADD's result; the failures (each
    plugin is asked even when an earlier one failed, so nothing is left behind needlessly)."""
    failures = []
    for plugin in reversed(_plugins(conflist)):
        try:
            invoke("DEL", _plugin_conf(conflist, plugin, runtime, result), where, path)
        except CniError as err:
            failures.append(str(err))
    return failures


def _plugins(conflist: JsonObject) -> list[JsonObject]:
    plugins = conflist.get("plugins")
    return [p for p in plugins if isinstance(p, dict)] if isinstance(plugins, list) else []
