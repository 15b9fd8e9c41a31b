"""Nomad's `agent` command-line flags that override its configuration files (`-bind`,
`-data-dir`, `-servers`, ...), as one more document merged after the files: flags win per key,
`-servers` adds to client.servers as a later file would, and every value goes through the same
checks as the files' (errors name the flag)."""

from __future__ import annotations

from dataclasses import dataclass

from app.agentconfig.files import AgentConfigError
from app.wire.json import JsonObject

# How errors about the flags' document name where it came from.
FLAGS_ORIGIN = "command-line flags"


@dataclass(frozen=True)
class AgentFlags:
    """The flags as given; empty or False means not given (the files or defaults decide)."""

    bind: str = ""
    data_dir: str = ""
    dc: str = ""
    region: str = ""
    node: str = ""
    log_level: str = ""
    log_json: bool = False
    server: bool = False
    client: bool = False
    servers: str = ""
    node_class: str = ""
    node_pool: str = ""
    meta: tuple[str, ...] = ()
    state_dir: str = ""
    alloc_dir: str = ""
    network_interface: str = ""
    plugin_dir: str = ""

    def given(self) -> bool:
        return self != AgentFlags()


def flag_document(flags: AgentFlags) -> JsonObject:
    """The flags as an agent configuration document."""
    top: JsonObject = {}
    plain = {
        "bind_addr": flags.bind,
        "data_dir": flags.data_dir,
        "datacenter": flags.dc,
        "region": flags.region,
        "name": flags.node,
        "log_level": flags.log_level,
        "plugin_dir": flags.plugin_dir,  # no meaning here: the files' check warns about it, naming it
    }
    top.update({key: value for key, value in plain.items() if value})
    if flags.log_json:
        top["log_json"] = True
    if flags.server:
        top["server"] = {"enabled": True}
    client = _client(flags)
    if client:
        top["client"] = client
    return top


def _client(flags: AgentFlags) -> JsonObject:
    client: JsonObject = {}
    if flags.client:
        client["enabled"] = True
    if flags.servers:
        client["servers"] = [s.strip() for s in flags.servers.split(",") if s.strip()]
    plain = {
        "node_class": flags.node_class,
        "node_pool": flags.node_pool,
        "state_dir": flags.state_dir,
        "alloc_dir": flags.alloc_dir,
        "network_interface": flags.network_interface,
    }
    client.update({key: value for key, value in plain.items() if value})
    if flags.meta:
        client["meta"] = meta_pairs(flags.meta)
    return client


def meta_pairs(given: tuple[str, ...]) -> JsonObject:
    """`-meta key=value` (repeatable) as the client.meta map."""
    meta: JsonObject = {}
    for pair in given:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise AgentConfigError(f"{FLAGS_ORIGIN}: -meta {pair!r}: must be key=value")
        meta[key.strip()] = value
    return meta
