"""Nomad's agent configuration: files found and merged as Nomad merges them, unknown keys refused
naming file, block and key, Nomad keys with no meaning here warned about, and every supported key
translated into the CORRAL_* variable or client setting the roles already read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.agentconfig.files import AgentConfigError, config_files, merge, parse_file
from app.agentconfig.load import is_agent_config, load
from app.agentconfig.translate import local_api
from app.wire.json import JsonObject
from client.config import build

pytestmark = pytest.mark.unit

BASE = """
data_dir  = "/var/lib/corral"
bind_addr = "0.0.0.0"
ports { http = 4747 }
log_level = "WARN"
log_json  = true
datacenter = "eu1"
name = "node-a"
server {
  enabled          = true
  num_schedulers   = 2
  heartbeat_grace  = "20s"
  min_heartbeat_ttl = "15s"
  job_gc_threshold = "2h"
  eval_gc_threshold = "30m"
  node_gc_threshold = "48h"
  deployment_gc_threshold = "90m"
  job_tracked_versions = 10
  job_max_source_size = "2M"
}
acl { enabled = true }
database { url = "postgresql://corral@db/corral" }
"""


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text)
    return path


def test_every_server_key_becomes_its_corral_variable(tmp_path: Path) -> None:
    found = load([write(tmp_path, "agent.hcl", BASE)])
    assert found.server_enabled and not found.client_enabled
    assert found.env == {
        "CORRAL_DATA_DIR": "/var/lib/corral",
        "CORRAL_BIND": "0.0.0.0:4747",
        "CORRAL_LOG_LEVEL": "warning",
        "CORRAL_LOG_FORMAT": "json",
        "CORRAL_NUM_SCHEDULERS": "2",
        "CORRAL_HEARTBEAT_GRACE_S": "20.0",
        "CORRAL_HEARTBEAT_MIN_TTL_S": "15.0",
        "CORRAL_JOB_GC_THRESHOLD_S": "7200.0",
        "CORRAL_EVAL_GC_THRESHOLD_S": "1800.0",
        "CORRAL_NODE_GC_THRESHOLD_S": "172800.0",
        "CORRAL_DEPLOYMENT_GC_THRESHOLD_S": "5400.0",
        "CORRAL_JOB_MAX_VERSIONS": "10",
        "CORRAL_JOB_MAX_SOURCE_SIZE": "2000000",
        "CORRAL_ACL_ENABLED": "true",
        "CORRAL_DATABASE_URL": "postgresql://corral@db/corral",
    }
    assert found.warnings == []
    assert found.summary["Datacenter"] == "eu1" and found.summary["NodeName"] == "node-a"


def test_a_directory_merges_its_files_in_lexical_order_later_files_winning_per_key(tmp_path: Path) -> None:
    client = 'client {\n enabled = true\n meta { rack = "r2" }\n servers = ["10.0.0.2:4646"]\n}\n'
    write(tmp_path, "20-client.hcl", client)
    write(tmp_path, "10-base.hcl", BASE)
    write(tmp_path, "30-more.json", json.dumps({"client": {"meta": {"zone": "z"}, "servers": ["10.0.0.3:4646"]}}))
    write(tmp_path, "notes.txt", "not a config file")
    write(tmp_path, ".hidden.hcl", "garbage {{{")
    assert [p.name for p in config_files([tmp_path])] == ["10-base.hcl", "20-client.hcl", "30-more.json"]
    found = load([tmp_path])
    assert found.client["meta"] == {"rack": "r2", "zone": "z"}  # blocks merge key by key
    # client.servers adds up across files, as in Nomad; the client talks to the first.
    assert found.client["server"] == "http://10.0.0.2:4646"
    assert any("client.servers" in w and "one API address" in w for w in found.warnings)
    later = load([tmp_path, write(tmp_path / "..", "late.hcl", 'log_level = "DEBUG"\n')])
    assert later.env["CORRAL_LOG_LEVEL"] == "debug"  # a later -config wins


def test_merge_replaces_scalars_and_lists_but_merges_objects() -> None:
    first: JsonObject = {"a": 1, "b": {"x": 1, "y": [1]}, "client": {"servers": ["s1"]}}
    second: JsonObject = {"a": 2, "b": {"y": [2]}, "client": {"servers": ["s2", "s1"]}}
    assert merge(first, second) == {"a": 2, "b": {"x": 1, "y": [2]}, "client": {"servers": ["s1", "s2"]}}


def test_hcl_blocks_and_json_blocks_read_alike(tmp_path: Path) -> None:
    hcl = write(tmp_path, "a.hcl", 'plugin "docker" {\n config {\n volumes { enabled = true }\n }\n}\n')
    as_json = write(
        tmp_path, "a.json", json.dumps({"plugin": [{"docker": [{"config": [{"volumes": [{"enabled": True}]}]}]}]})
    )
    expected = {"plugin": {"docker": {"config": {"volumes": {"enabled": True}}}}}
    assert parse_file(hcl) == expected
    assert parse_file(as_json) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("serverr { enabled = true }", "unknown key 'serverr' in the top level"),
        ("server {\n enabled = true\n num_scheduler = 2\n}", "unknown key 'num_scheduler' in block 'server'"),
        ("client {\n reserved { cpus = 1 }\n}", "unknown key 'cpus' in block 'client.reserved'"),
        ('client {\n host_volume "x" { paths = "/tmp" }\n}', "unknown key 'paths' in block 'client.host_volume.x'"),
        ('plugin "docker" {\n config { endpoitn = "x" }\n}', "unknown key 'endpoitn' in block 'plugin.docker.config'"),
        ('plugin "dockerr" {\n config {}\n}', "plugin 'dockerr': unknown task driver"),
        ('server {\n heartbeat_grace = "soon"\n}', 'server.heartbeat_grace: must be a duration like "30s"'),
        ("server {\n num_schedulers = 0\n}", "server.num_schedulers: must be an integer of at least 1"),
        ('log_level = "LOUD"', "log_level: must be one of TRACE, DEBUG, INFO, WARN, ERR"),
        ("client {\n gc_disk_usage_threshold = 120\n}", "client.gc_disk_usage_threshold: must be a percentage"),
        ("server = 1", "server: must be a block"),
        ("server {", "invalid HCL"),
    ],
)
def test_bad_keys_and_values_are_refused_naming_file_block_and_key(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "agent.hcl", f'data_dir = "/d"\n{text}\n')
    with pytest.raises(AgentConfigError) as refused:
        load([path])
    assert str(refused.value).startswith(f"{path}: ")
    assert message in str(refused.value)


def test_nomad_keys_without_meaning_here_are_warned_about_by_name(tmp_path: Path) -> None:
    text = BASE + (
        'region = "eu"\nconsul { address = "127.0.0.1:8500" }\nserver { bootstrap_expect = 3 }\n'
        'client {\n enabled = true\n options = { "driver.denylist" = "docker", "fingerprint.denylist" = "env_aws" }\n'
        " reserved { cores = 1 }\n}\n"
        'plugin "java" { config {} }\nplugin "docker" {\n config { allow_privileged = true }\n}\n'
    )
    path = write(tmp_path, "agent.hcl", text)
    warnings = load([path]).warnings
    for name in ("consul", "server.bootstrap_expect", "client.reserved.cores", "plugin.docker.config.allow_privileged"):
        assert f"{path}: {name} has no meaning in corral; ignored" in warnings
    assert f"{path}: plugin.java: corral has no java driver; ignored" in warnings
    assert any("region 'eu'" in w for w in warnings)
    assert any("client.options['fingerprint.denylist']" in w for w in warnings)


def test_the_client_block_and_plugins_become_the_clients_config(tmp_path: Path) -> None:
    volume = tmp_path / "data"
    volume.mkdir()
    text = BASE + (
        'client {\n enabled = true\n node_class = "edge"\n node_pool = "batch"\n meta { rack = "r1" }\n'
        f' host_volume "data" {{\n  path = "{volume}"\n  read_only = true\n }}\n'
        ' options = { "user.denylist" = "root,nobody" }\n'
        ' reserved {\n  cpu = 100\n  memory = 256\n  disk = 1024\n  reserved_ports = "22"\n }\n'
        ' gc_interval = "30s"\n gc_max_allocs = 20\n cni_path = "/opt/cni/bin"\n'
        ' chroot_env = { "/bin" = "/bin" }\n}\n'
        'plugin "raw_exec" {\n config { enabled = true }\n}\n'
        'plugin "docker" {\n config {\n  endpoint = "unix:///run/docker.sock"\n  infra_image = "pause:1"\n'
        "  volumes { enabled = true }\n }\n}\n"
    )
    found = load([write(tmp_path, "agent.hcl", text)])
    assert found.client_enabled
    config = build(found.client, {}, {})
    assert config.server == "http://0.0.0.0:4747".replace("0.0.0.0", "127.0.0.1")  # the local API
    assert config.data_dir == Path("/var/lib/corral/client")  # Nomad's state_dir default
    assert (config.datacenter, config.name, config.node_class, config.node_pool) == ("eu1", "node-a", "edge", "batch")
    assert config.meta == {"rack": "r1"}
    assert config.drivers == ("raw_exec", "exec", "docker")
    assert (config.reserved_cpu, config.reserved_memory_mb, config.reserved_disk_mb) == (100, 256, 1024)
    assert config.reserved_ports == "22"
    assert (config.gc.interval_s, config.gc.max_allocs) == (30.0, 20)
    assert config.user_denylist == ("nobody", "root")
    assert config.chroot_env == {"/bin": "/bin"} and config.cni_path == "/opt/cni/bin"
    assert [(v.name, v.path, v.read_only) for v in config.host_volumes] == [("data", volume.resolve(), True)]
    assert (config.docker_endpoint, config.docker_volumes_enabled) == ("unix:///run/docker.sock", True)
    assert config.docker_infra_image == "pause:1"
    assert found.summary["Client"] == {
        "Enabled": True,
        "Servers": ["http://127.0.0.1:4747"],
        "NodeClass": "edge",
        "NodePool": "batch",
        "Meta": {"rack": "r1"},
        "Drivers": ["raw_exec", "exec", "docker"],
    }


def test_drivers_follow_nomads_defaults_and_the_driver_options(tmp_path: Path) -> None:
    base = 'data_dir = "/d"\nclient {\n enabled = true\n servers = ["s:4646"]\n'
    plain = load([write(tmp_path, "a.hcl", base + "}\n")])
    assert plain.client["drivers"] == ["exec", "docker"]  # raw_exec off unless its plugin enables it
    denied = load([write(tmp_path, "b.hcl", base + ' options = { "driver.denylist" = "docker" }\n}\n')])
    assert denied.client["drivers"] == ["exec"]
    allowed = load(
        [
            write(tmp_path, "c.hcl", base + ' options = { "driver.allowlist" = "raw_exec" }\n}\n'),
            write(tmp_path, "d.hcl", 'plugin "raw_exec" {\n config { enabled = true }\n}\n'),
        ]
    )
    assert allowed.client["drivers"] == ["raw_exec"]


def test_settings_taken_together_are_checked(tmp_path: Path) -> None:
    cases = {
        "server { enabled = true }": "data_dir is required",
        'data_dir = "/d"': "neither server nor client is enabled",
        'data_dir = "/d"\nclient { enabled = true }': "client.servers is required when the server is not enabled",
        'data_dir = "/d"\nserver { enabled = true }\ntls { http = true }': "tls.http = true needs tls.cert_file",
    }
    for text, message in cases.items():
        with pytest.raises(AgentConfigError, match=message):
            load([write(tmp_path, "agent.hcl", text)])


def test_tls_serves_https_and_the_agents_client_trusts_the_ca(tmp_path: Path) -> None:
    text = (
        'data_dir = "/d"\nserver { enabled = true }\nclient { enabled = true }\n'
        'tls {\n http = true\n cert_file = "/c.pem"\n key_file = "/k.pem"\n ca_file = "/ca.pem"\n'
        " verify_https_client = true\n rpc = true\n}\n"
    )
    found = load([write(tmp_path, "agent.hcl", text)])
    assert found.env["CORRAL_TLS_CERT_FILE"] == "/c.pem" and found.env["CORRAL_TLS_KEY_FILE"] == "/k.pem"
    assert found.env["CORRAL_TLS_CA_FILE"] == "/ca.pem" and found.env["CORRAL_TLS_VERIFY_CLIENT"] == "true"
    assert found.client_env == {"CORRAL_CACERT": "/ca.pem"}
    assert found.client["server"] == "https://127.0.0.1:4646"
    assert any("tls.rpc has no meaning" in w for w in found.warnings)


def test_the_clients_own_config_reads_only_the_client_part(tmp_path: Path) -> None:
    """`corral client -config agent.hcl`: the client runs whatever the file enables; its server
    and data directory come from its flags when the file names none."""
    path = write(tmp_path, "client.hcl", 'client {\n node_class = "gpu"\n}\nserver { enabled = true }\n')
    found = load([path], client_only=True)
    assert found.client == {"node_class": "gpu", "drivers": ["exec", "docker"]}


def test_which_files_are_agent_configuration(tmp_path: Path) -> None:
    flat = write(tmp_path, "flat.json", json.dumps({"datacenter": "dc2"}))
    nomad_json = write(tmp_path, "nomad.json", json.dumps({"client": {"enabled": True}}))
    assert not is_agent_config(flat) and is_agent_config(nomad_json)
    assert is_agent_config(write(tmp_path, "agent.hcl", ""))
    only_flat = tmp_path / "flat"
    only_flat.mkdir()
    write(only_flat, "client.json", "{}")
    assert not is_agent_config(only_flat) and is_agent_config(tmp_path)


def test_the_local_api_of_a_wildcard_bind_is_loopback() -> None:
    assert local_api("0.0.0.0:4646") == "http://127.0.0.1:4646"
    assert local_api("[::]:4646", "https") == "https://[::1]:4646"
    assert local_api("10.1.2.3:80") == "http://10.1.2.3:80"


def test_missing_paths_and_empty_directories_are_refused(tmp_path: Path) -> None:
    with pytest.raises(AgentConfigError, match="no such file or directory"):
        config_files([tmp_path / "nope.hcl"])
    with pytest.raises(AgentConfigError, match=r"no \*\.hcl or \*\.json config files"):
        config_files([tmp_path])
