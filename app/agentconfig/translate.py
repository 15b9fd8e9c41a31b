"""The merged agent configuration as what the roles already read: CORRAL_* variables for the
agent and its server roles, and the values of the client's config file (client/config.py)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from app.agentconfig import values as v
from app.agentconfig.files import AgentConfigError
from app.agentconfig.schema import AGENT, PLUGIN_CONFIGS, Block, Key, plugin_block
from app.wire.json import JsonObject, JsonValue

DEFAULT_PORT = 4646
# The drivers a production client runs unless a plugin block or a driver option says otherwise:
# Nomad's (exec and docker on, raw_exec off); each reports itself unhealthy where it cannot work.
DEFAULT_DRIVERS = ("exec", "docker")
CLIENT_OPTIONS = ("user.denylist", "user.checked_drivers")
DRIVER_OPTIONS = ("driver.allowlist", "driver.denylist")


@dataclass
class AgentConfig:
    """What `corral agent -config` runs. `env`: CORRAL_* values for the agent and the server
    roles (they win over the agent's own environment); `client`: the client's config values."""

    server_enabled: bool = False
    client_enabled: bool = False
    env: dict[str, str] = field(default_factory=dict)
    client: JsonObject = field(default_factory=dict)
    client_env: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    summary: JsonObject = field(default_factory=dict)


def translate(document: JsonObject, origin: str, *, client_only: bool = False) -> AgentConfig:
    """The merged files' settings (already checked one by one) as an AgentConfig; `origin` names
    the files in errors about settings taken together. `client_only`: for `corral client
    -config`, which runs the client whatever the file enables, and takes its server and data
    directory from its flags when the file names none."""
    found = AgentConfig()
    if client_only:
        document = {**document, "client": {**_block(document, "client"), "enabled": True}}
        document.pop("server", None)
    _walk(AGENT, {k: val for k, val in document.items() if k != "plugin"}, found)
    plugin_values(document, found)
    server, client = _block(document, "server"), _block(document, "client")
    found.server_enabled = bool(v.boolean(server.get("enabled", False)))
    found.client_enabled = bool(v.boolean(client.get("enabled", False)))
    _agent(document, found, origin, client_only)
    _tls(document, found, origin)
    if found.server_enabled and "data_dir" in server:
        found.env["CORRAL_DATA_DIR"] = str(server["data_dir"])
    _client(document, found, origin, client_only)
    found.summary = _summary(document, found)
    return found


def _block(document: JsonObject, name: str) -> JsonObject:
    body = document.get(name, {})
    return body if isinstance(body, dict) else {}


def _walk(block: Block, body: JsonObject, found: AgentConfig) -> None:
    """Every key that maps onto one CORRAL_* variable or one client setting."""
    for key, value in body.items():
        spec = block.keys.get(key)
        if isinstance(spec, Block) and isinstance(value, dict) and not spec.labeled:
            _walk(spec, value, found)
        elif isinstance(spec, Key):
            converted = spec.convert(value)
            if spec.env:
                found.env[spec.env] = v.env_text(converted)
            if spec.client:
                found.client[spec.client] = converted


def _agent(document: JsonObject, found: AgentConfig, origin: str, client_only: bool) -> None:
    addresses, ports = _block(document, "addresses"), _block(document, "ports")
    if "bind_addr" in document or "http" in addresses or "http" in ports:
        host = str(addresses.get("http") or document.get("bind_addr") or "127.0.0.1")
        port = ports.get("http", DEFAULT_PORT)
        found.env["CORRAL_BIND"] = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if "log_json" in document:
        found.env["CORRAL_LOG_FORMAT"] = "json" if v.boolean(document["log_json"]) else "console"
    region = document.get("region", "global")
    if region != "global":
        found.warnings.append(f'{origin}: region {region!r}: corral runs one region, "global"; ignored')
    if client_only:
        return
    if (found.server_enabled or found.client_enabled) and "data_dir" not in document:
        raise AgentConfigError(f"{origin}: data_dir is required (where the agent keeps its state)")
    if not (found.server_enabled or found.client_enabled):
        raise AgentConfigError(f"{origin}: neither server nor client is enabled: nothing to run")


def _tls(document: JsonObject, found: AgentConfig, origin: str) -> None:
    tls = _block(document, "tls")
    if not v.boolean(tls.get("http", False)):
        return
    if "cert_file" not in tls or "key_file" not in tls:
        raise AgentConfigError(f"{origin}: tls.http = true needs tls.cert_file and tls.key_file")
    found.env["CORRAL_TLS_CERT_FILE"] = str(tls["cert_file"])
    found.env["CORRAL_TLS_KEY_FILE"] = str(tls["key_file"])
    if "ca_file" in tls:
        found.env["CORRAL_TLS_CA_FILE"] = str(tls["ca_file"])
        # The agent's own client trusts the servers' CA (client_tls reads CORRAL_CACERT).
        found.client_env["CORRAL_CACERT"] = str(tls["ca_file"])


def _client(document: JsonObject, found: AgentConfig, origin: str, client_only: bool) -> None:
    client = _block(document, "client")
    values = found.client
    if "data_dir" in document and "data_dir" not in values:
        values["data_dir"] = str(Path(str(document["data_dir"])) / "client")  # Nomad's state_dir default
    if "host_volume" in client:
        values["host_volume"] = client["host_volume"]
    scheme = "https" if v.boolean(_block(document, "tls").get("http", False)) else "http"
    listed = v.string_list(client.get("servers", []))
    servers = [str(s) for s in listed] if isinstance(listed, list) else []
    if servers:
        values["server"] = servers[0] if "://" in servers[0] else f"{scheme}://{servers[0]}"
        if len(servers) > 1:
            found.warnings.append(
                f"{origin}: client.servers: corral's client talks to one API address; using {servers[0]} "
                "(put a load balancer in front of several servers)"
            )
    elif found.client_enabled and found.server_enabled:
        values["server"] = local_api(found.env.get("CORRAL_BIND", "127.0.0.1:4646"), scheme)
    elif found.client_enabled and not client_only:
        raise AgentConfigError(f"{origin}: client.servers is required when the server is not enabled")
    options = v.scalar_map(client.get("options", {}))
    assert isinstance(options, dict)
    _options(options, found, origin)
    values["drivers"] = list(_drivers(document, options))


def local_api(bind: str, scheme: str = "http") -> str:
    """Where a client on this machine reaches the API bound at `bind` (a wildcard: loopback)."""
    host, _, port = bind.rpartition(":")
    host = host.strip("[]")
    host = {"": "127.0.0.1", "0.0.0.0": "127.0.0.1", "::": "::1"}.get(host, host)
    return f"{scheme}://[{host}]:{port}" if ":" in host else f"{scheme}://{host}:{port}"


def _options(options: JsonObject, found: AgentConfig, origin: str) -> None:
    kept = {key: value for key, value in options.items() if key in CLIENT_OPTIONS}
    if kept:
        found.client["options"] = kept
    for key in sorted(set(options) - set(CLIENT_OPTIONS) - set(DRIVER_OPTIONS)):
        found.warnings.append(f"{origin}: client.options[{key!r}] has no meaning in corral; ignored")


def _drivers(document: JsonObject, options: JsonObject) -> tuple[str, ...]:
    """Nomad's defaults, raw_exec when its plugin enables it, then driver.allowlist/denylist."""
    plugins = _block(document, "plugin")
    drivers = list(DEFAULT_DRIVERS)
    raw_exec = _block(_block(plugins, "raw_exec"), "config")
    if v.boolean(raw_exec.get("enabled", False)):
        drivers.insert(0, "raw_exec")
    allow = _names(options.get("driver.allowlist"))
    deny = _names(options.get("driver.denylist"))
    return tuple(d for d in drivers if (not allow or d in allow) and d not in deny)


def _names(value: JsonValue) -> set[str]:
    return {name.strip() for name in str(value or "").split(",") if name.strip()}


def plugin_values(document: JsonObject, found: AgentConfig) -> None:
    """The plugin blocks' settings that map onto client settings (docker's endpoint, volumes)."""
    for name, body in _block(document, "plugin").items():
        if name in PLUGIN_CONFIGS and isinstance(body, dict):
            _walk(plugin_block(name), body, found)


def _summary(document: JsonObject, found: AgentConfig) -> JsonObject:
    """The agent's own part of /v1/agent/self's config (the server roles add what they run with)."""
    client = found.client
    return {
        "Region": str(document.get("region", "global")),
        "Datacenter": str(document.get("datacenter", "dc1")),
        "NodeName": str(document.get("name", "")),
        "DataDir": str(document.get("data_dir", "")),
        "Client": {
            "Enabled": found.client_enabled,
            "Servers": [str(client["server"])] if "server" in client else [],
            "NodeClass": str(client.get("node_class", "")),
            "NodePool": str(client.get("node_pool", "default")),
            "Meta": client.get("meta", {}),
            "Drivers": client.get("drivers", []),
        },
    }
