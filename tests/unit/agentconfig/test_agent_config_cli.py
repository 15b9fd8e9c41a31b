"""The commands that read Nomad's agent configuration: `corral client -config` (HCL besides its
flat JSON), `corral config validate` (the same errors and warnings as the agent), `corral agent`
(-dev or -config), and the plan the agent launches from a configuration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from app.cli import main
from app.cli.client import client, client_config
from app.settings.config import get_settings
from client.config import ClientConfig
from workers.agent import config_plan, dev_roles, server_roles

pytestmark = pytest.mark.unit


@pytest.fixture(autouse=True)
def fresh_settings() -> None:
    get_settings.cache_clear()


def config_of(args: list[str]) -> ClientConfig:
    context = client.make_context("client", args)
    options = dict(context.params)
    return client_config(options.pop("config_file"), options)


def test_the_client_reads_agent_hcl_and_flags_still_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_ADDR", "http://api.example:4646")
    path = tmp_path / "client.hcl"
    path.write_text(
        'datacenter = "eu1"\nclient {\n enabled = true\n node_class = "gpu"\n meta { rack = "r1" }\n}\n'
        'plugin "raw_exec" {\n config { enabled = true }\n}\n'
    )
    config = config_of(["-config", str(path), "--node-class", "cpu"])
    assert (config.datacenter, config.node_class, config.meta) == ("eu1", "cpu", {"rack": "r1"})
    assert config.drivers == ("raw_exec", "exec", "docker")
    assert config.server == "http://api.example:4646"  # no client.servers: the CLI's address
    with_server = tmp_path / "server.hcl"
    with_server.write_text('client {\n servers = ["10.0.0.1:4646"]\n}\n')
    assert config_of(["-config", str(with_server)]).server == "http://10.0.0.1:4646"


def test_the_clients_flat_json_file_still_reads_as_before(tmp_path: Path) -> None:
    path = tmp_path / "client.json"
    path.write_text(json.dumps({"datacenter": "dc2", "drivers": ["mock"], "server": "http://s:4646"}))
    config = config_of(["-config", str(path)])
    assert (config.datacenter, config.drivers, config.server) == ("dc2", ("mock",), "http://s:4646")


def test_the_client_refuses_an_unknown_hcl_key_by_file_block_and_key(tmp_path: Path) -> None:
    path = tmp_path / "client.hcl"
    path.write_text('client {\n node_klass = "x"\n}\n')
    result = CliRunner().invoke(main, ["client", "-config", str(path)])
    assert result.exit_code == 2
    assert f"{path}: unknown key 'node_klass' in block 'client'" in result.output


def test_config_validate_checks_agent_files_with_the_agents_errors_and_warnings(tmp_path: Path) -> None:
    folder = tmp_path / "nomad.d"
    folder.mkdir()
    (folder / "base.hcl").write_text('data_dir = "/d"\nserver {\n enabled = true\n bootstrap_expect = 3\n}\n')
    (folder / "client.json").write_text(json.dumps({"client": {"enabled": True}}))
    valid = CliRunner().invoke(main, ["config", "validate", str(folder)], env={"CORRAL_BIND": "127.0.0.1:4646"})
    assert valid.exit_code == 0, valid.output
    assert valid.stdout == "Configuration is valid!\n"
    assert f"{folder / 'base.hcl'}: server.bootstrap_expect has no meaning in corral; ignored" in valid.stderr
    (folder / "zz.hcl").write_text('client {\n host_volume "x" { path = "/no/such/dir" }\n}\n')
    refused = CliRunner().invoke(main, ["config", "validate", str(folder)])
    assert refused.exit_code == 1
    assert "host_volume 'x': path /no/such/dir is not an existing directory" in refused.stderr
    (folder / "zz.hcl").write_text("telemetry {\n prometheus = true\n}\n")
    refused = CliRunner().invoke(main, ["config", "validate", str(folder)])
    assert refused.exit_code == 1
    assert f"{folder / 'zz.hcl'}: unknown key 'prometheus' in block 'telemetry'" in refused.stderr


def test_agent_takes_dev_or_config(tmp_path: Path) -> None:
    neither = CliRunner().invoke(main, ["agent"])
    assert neither.exit_code == 2 and "give -dev" in neither.output
    path = tmp_path / "a.hcl"
    path.write_text('data_dir = "/d"\nserver { enabled = true }\n')
    both = CliRunner().invoke(main, ["agent", "-dev", "-config", str(path)])
    assert both.exit_code == 2 and "give -dev" in both.output
    path.write_text("server { enabled = true\n raft_protocol = 3\n unknown = 1 }\n")
    refused = CliRunner().invoke(main, ["agent", "-config", str(path)])
    assert refused.exit_code == 1
    assert f"{path}: unknown key 'unknown' in block 'server'" in refused.output


def test_a_config_plan_runs_the_roles_the_file_enables(tmp_path: Path) -> None:
    client_file = tmp_path / "data" / "agent-client.json"
    both = config_plan(True, {"server": "http://127.0.0.1:4646"}, client_file, {"CORRAL_CACERT": "/ca"}, None)
    assert [role.name for role in both.server_roles] == ["server", "worker1", "worker2", "applier", "leader"]
    assert all(not role.env for role in both.server_roles)  # none of the dev server's settings
    assert both.client is not None and both.client_extra_env == {"CORRAL_CACERT": "/ca"}
    role = both.client()
    assert role.args == ["client", "-config", str(client_file)]
    assert json.loads(client_file.read_text()) == {"server": "http://127.0.0.1:4646"}
    assert client_file.stat().st_mode & 0o777 == 0o600
    client_only = config_plan(False, {"server": "http://s:4646"}, client_file, {}, "node-token")
    assert client_only.server_roles == () and client_only.client_token == "node-token"
    assert config_plan(True, None, client_file, {}, None).client is None
    assert [r.name for r in server_roles()] == [r.name for r in dev_roles({})]


def test_a_client_only_agent_opens_no_database_and_hands_its_client_the_node_token(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No server roles: no database is opened, no API awaited; the client gets the operator's
    node token and the configuration's extra environment, and none of the database settings."""
    import signal
    import threading
    from collections.abc import Mapping

    import workers.agent as launcher
    from app.settings.config import Settings

    def no_database(_settings: Settings) -> None:
        raise AssertionError("a client-only agent must not open a database")

    spawned: list[tuple[str, dict[str, str]]] = []
    real_spawn = launcher._spawn

    def spawn(role: launcher.Role, env: Mapping[str, str], lock: threading.Lock) -> launcher.Child:
        spawned.append((role.name, dict(env)))
        return real_spawn(launcher.Role(role.name, ["version"]), env, lock)

    monkeypatch.setattr(launcher, "open_database", no_database)
    monkeypatch.setattr(launcher, "_spawn", spawn)
    monkeypatch.setenv("CORRAL_DATABASE_URL", "postgresql://secret@db/corral")
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    plan = config_plan(False, {"server": "http://s:4646"}, tmp_path / "c.json", {"CORRAL_CACERT": "/ca"}, "tok")
    try:
        code = launcher.run_agent(Settings(data_dir=tmp_path, bind="127.0.0.1:1"), plan)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    assert code == 1  # `corral version` exits at once, and the agent stops with its role
    [(name, env)] = spawned
    assert name == "client" and env["CORRAL_TOKEN"] == "tok" and env["CORRAL_CACERT"] == "/ca"
    assert not any("DATABASE" in key for key in env)
