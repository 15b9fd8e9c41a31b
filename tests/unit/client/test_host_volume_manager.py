"""The client's dynamic host volumes: the mkdir plugin makes each listed volume's directory under
the host volumes directory (with the `mode` parameter), a registered volume is reported only when
its directory exists, and a mkdir directory the servers no longer list is removed."""

from __future__ import annotations

import stat
import uuid
from pathlib import Path

import pytest

from app.wire.api.api_host_volumes import NodeHostVolumeJson
from client.host_volumes import HostVolumeManager

pytestmark = pytest.mark.unit


def _volume(name: str, plugin: str = "mkdir", host_path: str = "", **params: str) -> NodeHostVolumeJson:
    return NodeHostVolumeJson(
        ID=str(uuid.uuid4()),
        Name=name,
        Namespace="default",
        PluginID=plugin,
        HostPath=host_path,
        State="pending",
        Parameters=params,
    )


def test_mkdir_makes_the_directory_with_its_mode_and_reports_it(tmp_path: Path) -> None:
    manager = HostVolumeManager(tmp_path / "host_volumes")
    volume = _volume("scratch", mode="0700")
    assert manager.sync([volume]) is True
    made = tmp_path / "host_volumes" / volume["ID"]
    assert made.is_dir() and stat.S_IMODE(made.stat().st_mode) == 0o700
    assert manager.fingerprint() == {
        "scratch": {"Name": "scratch", "Path": str(made), "ReadOnly": False, "ID": volume["ID"]}
    }
    assert manager.sync([volume]) is False  # nothing changed: no need to register again


def test_a_registered_volume_is_reported_once_its_directory_exists(tmp_path: Path) -> None:
    manager = HostVolumeManager(tmp_path / "host_volumes")
    target = tmp_path / "existing"
    volume = _volume("data", plugin="", host_path=str(target))
    assert manager.sync([volume]) is False and manager.fingerprint() == {}
    target.mkdir()
    assert manager.sync([volume]) is True
    assert manager.fingerprint()["data"]["Path"] == str(target)


def test_a_deleted_mkdir_volume_loses_its_directory_and_others_are_left_alone(tmp_path: Path) -> None:
    root = tmp_path / "host_volumes"
    manager = HostVolumeManager(root)
    kept, gone = _volume("kept"), _volume("gone")
    manager.sync([kept, gone])
    (root / "notes").mkdir()  # not a volume's directory: never ours to remove
    assert manager.sync([kept]) is True
    assert sorted(p.name for p in root.iterdir()) == sorted([kept["ID"], "notes"])
    assert set(manager.fingerprint()) == {"kept"}


def test_a_bad_mode_leaves_the_volume_unreported(tmp_path: Path) -> None:
    manager = HostVolumeManager(tmp_path / "host_volumes")
    assert manager.sync([_volume("odd", mode="rwx")]) is False
    assert manager.fingerprint() == {}
