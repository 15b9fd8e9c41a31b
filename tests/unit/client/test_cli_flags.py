"""Every `corral client` flag, through the real click command: each lands in the ClientConfig the
agent would run with, with its type and units; a bad value is a usage error naming the flag."""

from __future__ import annotations

import importlib
import json
import threading
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

import app.settings.logging
import client.agent
import workers.runtime
from app.cli import main
from client.config import ClientConfig, GcConfig, HostVolume

pytestmark = pytest.mark.unit
client_cli = importlib.import_module("app.cli.client")  # the package re-exports the command under this name


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[ClientConfig]:
    """Replaces the part that starts the agent with a capture of the config it would get."""
    configs: list[ClientConfig] = []
    monkeypatch.setattr(client.agent, "run_client", lambda config, _stop, **_hooks: configs.append(config))
    monkeypatch.setattr(workers.runtime, "stop_on_signals", threading.Event)
    monkeypatch.setattr(app.settings.logging, "configure", lambda *_args: None)
    monkeypatch.delenv("CORRAL_ADDR", raising=False)
    monkeypatch.delenv("NOMAD_ADDR", raising=False)
    return configs


def run(*args: str) -> Result:
    return CliRunner().invoke(main, ["client", *args])


def parsed(started: list[ClientConfig], *args: str) -> ClientConfig:
    result = run(*args)
    assert result.exit_code == 0, result.output
    assert result.exception is None
    return started[-1]


def test_without_flags_the_agent_gets_nomads_defaults(started: list[ClientConfig]) -> None:
    config = parsed(started)
    assert config.server == "http://127.0.0.1:4646"
    assert config.gc == GcConfig(
        interval_s=60.0, disk_usage_threshold=80.0, inode_usage_threshold=70.0, max_allocs=50, parallel_destroys=2
    )
    assert config.drivers == ("mock",)  # raw_exec is off outside dev mode, as in Nomad
    assert config.data_dir == Path(".corral-client").resolve()


def test_raw_exec_and_exec_are_enabled_by_dev_mode_or_explicitly(started: list[ClientConfig], tmp_path: Path) -> None:
    assert parsed(started, "--dev").drivers == ("raw_exec", "exec", "mock", "docker")
    assert parsed(started, "--dev", "--driver", "mock").drivers == ("mock",)
    config_file = tmp_path / "client.json"
    config_file.write_text('{"drivers": ["raw_exec"]}')
    assert parsed(started, "--config", str(config_file)).drivers == ("raw_exec",)


FLAGS: list[tuple[list[str], str, object]] = [
    (["--server", "http://10.0.0.1:4646"], "server", "http://10.0.0.1:4646"),
    (["--name", "n1"], "name", "n1"),
    (["-dc", "eu1"], "datacenter", "eu1"),
    (["--datacenter", "eu2"], "datacenter", "eu2"),
    (["--node-class", "gpu"], "node_class", "gpu"),
    (["--node-pool", "batch"], "node_pool", "batch"),
    (["--meta", "rack=r1", "--meta", "zone=a=b"], "meta", {"rack": "r1", "zone": "a=b"}),
    (["--driver", "mock"], "drivers", ("mock",)),
    (["--driver", "mock", "--driver", "raw_exec"], "drivers", ("mock", "raw_exec")),
    (["--driver", "docker"], "drivers", ("docker",)),
    (["--docker-endpoint", "unix:///run/d.sock"], "docker_endpoint", "unix:///run/d.sock"),
    (["--reserved-cpu", "500"], "reserved_cpu", 500),
    (["--reserved-memory", "256"], "reserved_memory_mb", 256),
    (["--reserved-disk", "1024"], "reserved_disk_mb", 1024),
    (["--reserved-ports", "22,8000-8100"], "reserved_ports", "22,8000-8100"),
    (["--cpu-total-compute", "8000"], "cpu_total_mhz", 8000),
    (["--memory-total-mb", "16384"], "memory_total_mb", 16384),
    (["--http-bind", "0.0.0.0:4647"], "http_bind", "0.0.0.0:4647"),
    (["--alloc-dir", "/srv/allocs"], "alloc_dir", "/srv/allocs"),
    (["--network-interface", "lo"], "network_interface", "lo"),
    (["-network-interface", "lo"], "network_interface", "lo"),
    (["--dev"], "dev_mode", True),
    (["-dev"], "dev_mode", True),
    (["--host-volume", "root=/:ro"], "host_volumes", (HostVolume("root", Path("/"), True),)),
]


@pytest.mark.parametrize(("args", "attribute", "expected"), FLAGS, ids=[" ".join(f[0]) for f in FLAGS])
def test_each_flag_lands_in_the_config(
    started: list[ClientConfig], args: list[str], attribute: str, expected: object
) -> None:
    value = getattr(parsed(started, *args), attribute)
    assert value == expected
    assert type(value) is type(expected)


def test_data_dir_flag_is_an_absolute_path(started: list[ClientConfig], tmp_path: Path) -> None:
    config = parsed(started, "--data-dir", str(tmp_path / "state"))
    assert config.data_dir == tmp_path / "state"


GC_FLAGS: list[tuple[list[str], str, object]] = [
    (["--gc-interval", "30"], "interval_s", 30.0),
    (["--gc-interval", "1m30s"], "interval_s", 90.0),
    (["--gc-interval", "500ms"], "interval_s", 0.5),
    (["--gc-disk-usage-threshold", "90"], "disk_usage_threshold", 90.0),
    (["--gc-inode-usage-threshold", "55.5"], "inode_usage_threshold", 55.5),
    (["--gc-max-allocs", "7"], "max_allocs", 7),
    (["--gc-parallel-destroys", "4"], "parallel_destroys", 4),
]


@pytest.mark.parametrize(("args", "attribute", "expected"), GC_FLAGS, ids=[" ".join(f[0]) for f in GC_FLAGS])
def test_each_gc_flag_lands_in_the_gc_config(
    started: list[ClientConfig], args: list[str], attribute: str, expected: object
) -> None:
    value = getattr(parsed(started, *args).gc, attribute)
    assert value == expected
    assert type(value) is type(expected)


def test_config_file_takes_nomads_gc_names_and_flags_win(started: list[ClientConfig], tmp_path: Path) -> None:
    path = tmp_path / "client.json"
    path.write_text(
        json.dumps({"datacenter": "file-dc", "gc_interval": "2m", "gc": {"max_allocs": 9, "gc_parallel_destroys": 3}})
    )
    config = parsed(started, "-config", str(path), "--gc-max-allocs", "11", "--name", "flagged")
    assert (config.datacenter, config.name) == ("file-dc", "flagged")
    assert config.gc == GcConfig(interval_s=120.0, max_allocs=11, parallel_destroys=3)
    assert config.server == "http://127.0.0.1:4646"


BAD: list[tuple[list[str], str]] = [
    (["--gc-interval", "soon"], "--gc-interval"),
    (["--gc-interval", "0"], "--gc-interval"),
    (["--gc-interval", "-5s"], "--gc-interval"),
    (["--gc-disk-usage-threshold", "101"], "--gc-disk-usage-threshold"),
    (["--gc-inode-usage-threshold", "x"], "--gc-inode-usage-threshold"),
    (["--gc-max-allocs", "0"], "--gc-max-allocs"),
    (["--gc-parallel-destroys", "0"], "--gc-parallel-destroys"),
    (["--reserved-cpu", "-1"], "--reserved-cpu"),
    (["--reserved-memory", "lots"], "--reserved-memory"),
    (["--reserved-disk", "1.5"], "--reserved-disk"),
    (["--reserved-ports", "22,http"], "--reserved-ports"),
    (["--reserved-ports", "9000-8000"], "--reserved-ports"),
    (["--cpu-total-compute", "0"], "--cpu-total-compute"),
    (["--memory-total-mb", "0"], "--memory-total-mb"),
    (["--driver", "podman"], "--driver"),
    (["--meta", "novalue"], "--meta"),
    (["--data-dir", __file__], "--data-dir"),
    (["--config", "/nonexistent/client.json"], "--config"),
]


@pytest.mark.parametrize(("args", "flag"), BAD, ids=[" ".join(b[0]) for b in BAD])
def test_a_bad_value_is_a_usage_error_naming_the_flag(started: list[ClientConfig], args: list[str], flag: str) -> None:
    result = run(*args)
    assert result.exit_code == 2, result.output
    assert isinstance(result.exception, SystemExit)  # click's usage error, not a traceback
    assert flag in result.output
    assert started == []


@pytest.mark.parametrize(
    ("settings", "key"),
    [
        ({"gc": {"interval": "never"}}, "gc_interval"),
        ({"gc_max_allocs": "many"}, "gc_max_allocs"),
        ({"gc": {"parallel_destroys": 0}}, "gc_parallel_destroys"),
        ({"gc": {"collect_everything": True}}, "collect_everything"),
        ({"datacentre": "x"}, "datacentre"),
    ],
)
def test_a_bad_config_file_value_is_a_usage_error_naming_the_key(
    started: list[ClientConfig], tmp_path: Path, settings: dict[str, object], key: str
) -> None:
    path = tmp_path / "client.json"
    path.write_text(json.dumps(settings))
    result = run("-config", str(path))
    assert result.exit_code == 2, result.output
    assert key in result.output
    assert started == []


def test_every_option_of_the_command_is_covered() -> None:
    """A new flag must get a line above."""
    covered = {a[0] for a, _, _ in FLAGS + GC_FLAGS} | {"--data-dir", "--config"}
    options = {
        next(o for o in p.opts if o.startswith("--")) for p in client_cli.client.params if isinstance(p, click.Option)
    }
    assert options <= covered | {"--datacenter"}
    assert options - covered <= {"--datacenter"}
