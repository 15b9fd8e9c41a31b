"""/v1/agent/self's `config`: the server's settings under Nomad's names, and what `corral agent
-config` loaded (CORRAL_AGENT_CONFIG) beside them."""

from __future__ import annotations

import json

import pytest

from app import create_app
from app.settings.config import Settings

pytestmark = pytest.mark.integration

LOADED = {
    "Region": "global",
    "Datacenter": "eu1",
    "NodeName": "node-a",
    "DataDir": "/var/lib/corral",
    "Files": ["/etc/corral.d"],
    "Client": {"Enabled": True, "Servers": ["http://127.0.0.1:4747"], "NodeClass": "edge", "Meta": {"rack": "r1"}},
}


def config_of(settings: Settings, database_url: str) -> dict[str, object]:
    app = create_app(settings, database_url)
    try:
        me = app.test_client().get("/v1/agent/self").json
    finally:
        app.extensions["corral"].close()
    assert me is not None
    config: dict[str, object] = me["config"]
    return config


def test_agent_self_reports_the_loaded_configuration_and_the_servers_settings(database_url: str) -> None:
    settings = Settings(
        database_url=database_url,
        agent_config=json.dumps(LOADED),
        bind="127.0.0.1:4747",
        num_schedulers=2,
        heartbeat_grace_s=20,
        job_gc_threshold_s=7200,
        log_level="warning",
    )
    config = config_of(settings, database_url)
    for key in ("Datacenter", "NodeName", "DataDir", "Files", "Client"):
        assert config[key] == LOADED[key]
    assert config["Ports"] == {"HTTP": 4747} and config["Addresses"] == {"HTTP": "127.0.0.1"}
    assert config["LogLevel"] == "WARN"  # Nomad's name of the level
    server = config["Server"]
    assert isinstance(server, dict)
    assert server["Enabled"] is True and server["NumSchedulers"] == 2
    assert server["HeartbeatGrace"] == 20 * 10**9  # a time.Duration: nanoseconds
    assert server["JobGCThreshold"] == "2h"  # a duration string, as Nomad's JSON has it


def test_agent_self_without_an_agent_configuration_reports_defaults(database_url: str) -> None:
    config = config_of(Settings(database_url=database_url), database_url)
    assert config["Client"] == {"Enabled": False}
    assert config["Region"] == "global" and config["Files"] == []
    assert config["ACL"] == {"Enabled": False}
