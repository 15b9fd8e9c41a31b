"""Nomad's `agent` flags over the configuration files: -bind, -data-dir, -server, -client,
-servers, -meta, ... win per key (servers add up), are checked as the files' values are, and
-dev takes only the ones that make sense on one host."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from app.agentconfig.files import AgentConfigError
from app.agentconfig.flags import AgentFlags, flag_document
from app.agentconfig.load import load
from app.cli import main
from app.cli.local.agent_config import dev_flag_env

pytestmark = pytest.mark.unit


def test_flags_become_the_keys_the_files_would_set() -> None:
    flags = AgentFlags(
        bind="0.0.0.0", data_dir="/var/lib/corral", dc="eu1", node="n1", server=True, client=True,
        servers="10.0.0.1:4646, 10.0.0.2:4646", node_class="gpu", meta=("rack=r1", "zone=a=b"),
    )  # fmt: skip
    assert flag_document(flags) == {
        "bind_addr": "0.0.0.0",
        "data_dir": "/var/lib/corral",
        "datacenter": "eu1",
        "name": "n1",
        "server": {"enabled": True},
        "client": {
            "enabled": True,
            "servers": ["10.0.0.1:4646", "10.0.0.2:4646"],
            "node_class": "gpu",
            "meta": {"rack": "r1", "zone": "a=b"},
        },
    }
    assert flag_document(AgentFlags()) == {} and not AgentFlags().given()


def test_flags_win_over_the_files_and_run_without_any(tmp_path: Path) -> None:
    path = tmp_path / "agent.hcl"
    path.write_text(
        'data_dir = "/from/file"\ndatacenter = "dc1"\nclient {\n enabled = true\n node_class = "a"\n}\n'
        "server {\n enabled = true\n}\n"
    )
    found = load([path], flags=AgentFlags(data_dir="/from/flag", node_class="b", bind="10.1.2.3"))
    assert found.env["CORRAL_DATA_DIR"] == "/from/flag" and found.env["CORRAL_BIND"] == "10.1.2.3:4646"
    assert (found.client["node_class"], found.client["datacenter"]) == ("b", "dc1")
    alone = load([], flags=AgentFlags(data_dir=str(tmp_path), server=True, client=True))
    assert alone.server_enabled and alone.client_enabled


def test_a_bad_flag_value_is_named_like_a_bad_file_value() -> None:
    with pytest.raises(AgentConfigError, match="command-line flags: log_level: must be one of"):
        load([], flags=AgentFlags(data_dir="/d", server=True, log_level="loud"))
    with pytest.raises(AgentConfigError, match="-meta 'rack': must be key=value"):
        load([], flags=AgentFlags(data_dir="/d", client=True, meta=("rack",)))


def test_dev_takes_bind_data_dir_and_logging_only() -> None:
    env = dev_flag_env(
        AgentFlags(bind="0.0.0.0", data_dir="/tmp/d", log_level="debug", log_json=True), "127.0.0.1:4646"
    )
    assert env == {
        "CORRAL_BIND": "0.0.0.0:4646",
        "CORRAL_DATA_DIR": "/tmp/d",
        "CORRAL_LOG_LEVEL": "debug",
        "CORRAL_LOG_FORMAT": "json",
    }
    with pytest.raises(click.UsageError, match="-server, -node-class: not with -dev"):
        dev_flag_env(AgentFlags(server=True, node_class="x"), "127.0.0.1:4646")
    refused = CliRunner().invoke(main, ["agent", "-dev", "-servers", "10.0.0.1:4646"])
    assert refused.exit_code == 2 and "-servers: not with -dev" in refused.output


def test_the_dev_agent_itself_runs_with_its_flags_not_the_settings_read_before_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent reads its settings once to learn the default port, then applies -data-dir,
    -bind and -log-level: the database, the lock, the client's directory and the health probe
    must all follow the flags (they once stayed in ./.corral on the default address)."""
    import workers.agent as launcher
    from app.settings.config import Settings, get_settings

    for name in ("CORRAL_DATA_DIR", "CORRAL_BIND", "CORRAL_LOG_LEVEL"):
        monkeypatch.delenv(name, raising=False)
    get_settings.cache_clear()
    ran: list[Settings] = []

    def run_dev_agent(settings: Settings) -> int:
        ran.append(settings)
        return 0

    monkeypatch.setattr(launcher, "run_dev_agent", run_dev_agent)
    state = tmp_path / "state"
    result = CliRunner().invoke(
        main, ["agent", "-dev", "-data-dir", str(state), "-bind", "127.0.0.2", "-log-level", "warn"]
    )
    get_settings.cache_clear()
    assert result.exit_code == 0, result.output
    [settings] = ran
    assert Path(settings.data_dir) == state
    assert settings.bind == "127.0.0.2:4646"
    assert settings.log_level == "warning"
    assert launcher.dev_client_role(settings).args[4:6] == ["--data-dir", str(state / "client")]


def test_flags_alone_start_a_configured_agent_that_names_what_is_missing(tmp_path: Path) -> None:
    missing = CliRunner().invoke(main, ["agent", "-client"])
    assert missing.exit_code == 1 and "data_dir" in missing.output
