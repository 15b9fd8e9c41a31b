"""Client host volumes: Nomad's `host_volume "name" { path, read_only }` in the config file
(as JSON: an object by name, or a list of them) and `--host-volume name=/path[:ro]`; each
fingerprinted as Node.HostVolumes; bad ones refused naming the volume; a task's mounts of them
(per_alloc ones by the allocation's index)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

import app.settings.logging
import client.agent
import workers.runtime
from app.cli import main
from client.agent import Client
from client.config import ClientConfig, ConfigError, HostVolume, build
from client.drivers import Mount, StartError
from client.tasks.volumes import task_mounts

pytestmark = pytest.mark.unit


def test_file_and_flags_declare_host_volumes(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    file_values = {"host_volume": [{"a": {"path": str(tmp_path / "a"), "read_only": True}}]}
    config = build(file_values, {"host_volumes": (f"b={tmp_path / 'b'}:ro", f"c={tmp_path / 'a'}")}, {})
    assert config.host_volumes == (
        HostVolume("a", (tmp_path / "a").resolve(), True),
        HostVolume("b", (tmp_path / "b").resolve(), True),
        HostVolume("c", (tmp_path / "a").resolve(), False),
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"x": {"path": "/does/not/exist"}}, "host_volume 'x': path /does/not/exist is not an existing directory"),
        ({"x": {"read_only": True}}, "host_volume 'x': path is required"),
        ({"x": {"path": "/", "readonly": True}}, "unknown setting(s) readonly"),
        ({"x": {"path": "/", "read_only": "yes"}}, "read_only must be true or false"),
        ("data", "host_volume: must be an object"),
    ],
)
def test_bad_host_volumes_are_refused(value: object, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build({"host_volume": value}, {}, {})
    assert message in str(caught.value)


def test_the_flag_reaches_the_agent_and_a_bad_one_is_a_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs: list[ClientConfig] = []
    monkeypatch.setattr(client.agent, "run_client", lambda config, _stop, **_hooks: configs.append(config))
    monkeypatch.setattr(workers.runtime, "stop_on_signals", threading.Event)
    monkeypatch.setattr(app.settings.logging, "configure", lambda *_args: None)
    config_file = tmp_path / "client.json"
    config_file.write_text(json.dumps({"host_volume": {"data": {"path": str(tmp_path)}}}))
    result = CliRunner().invoke(main, ["client", "--config", str(config_file), "--host-volume", f"logs={tmp_path}:ro"])
    assert result.exit_code == 0, result.output
    assert [(v.name, v.read_only) for v in configs[0].host_volumes] == [("data", False), ("logs", True)]
    bad = CliRunner().invoke(main, ["client", "--host-volume", "nopath"])
    assert bad.exit_code == 2 and "host volume must be name=/path" in bad.output


def test_host_volumes_are_in_the_node_fingerprint(tmp_path: Path) -> None:
    volume = HostVolume("data", tmp_path, True)
    agent = Client(ClientConfig(data_dir=tmp_path / "client", host_volumes=(volume,)), threading.Event())
    body = agent.node_body()
    assert body["HostVolumes"] == {"data": {"Name": "data", "Path": str(tmp_path), "ReadOnly": True}}


def test_a_per_alloc_request_mounts_the_volume_of_its_index() -> None:
    """Nomad's volume hook: `source = "data"` with per_alloc mounts `data[N]` for the allocation
    of index N; without per_alloc, `data` itself."""
    group = {
        "Volumes": {
            "own": {"Type": "host", "Source": "data", "PerAlloc": True},
            "shared": {"Type": "host", "Source": "data"},
        }
    }
    task = {"VolumeMounts": [{"Volume": "own", "Destination": "/own"}, {"Volume": "shared", "Destination": "/shared"}]}
    node: dict[str, dict[str, str | bool]] = {
        "data": {"Path": "/srv/shared"},
        "data[1]": {"Path": "/srv/one", "ReadOnly": True},
    }
    mounts = task_mounts(group, task, node, "web.db[1]")
    assert mounts == (Mount("/srv/one", "/own", True), Mount("/srv/shared", "/shared", False))
    with pytest.raises(StartError, match=r"data\[2\]"):
        task_mounts(group, task, node, "web.db[2]")
