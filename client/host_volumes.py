"""The client's dynamic host volumes (Nomad 1.10's hostvolumemanager with its built-in mkdir
plugin): from the servers' list of this node's volumes, make each mkdir volume's directory under
the host volumes directory, find each registered volume's existing directory, and remove the
directories of mkdir volumes the servers no longer list. What is found goes into the node's
HostVolumes with its ID, and the servers mark such a volume ready when the node registers."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path
from typing import TypedDict

import structlog

from app.wire.api.api_host_volumes import NodeHostVolumeJson

log = structlog.get_logger()
MKDIR = "mkdir"
DEFAULT_MODE = 0o755  # Nomad's mkdir plugin default


class DynamicVolumeInfo(TypedDict):
    """Node.HostVolumes[name] for a dynamic volume (Nomad's ClientHostVolumeConfig with its ID)."""

    Name: str
    Path: str
    ReadOnly: bool
    ID: str


class HostVolumeManager:
    def __init__(self, root: Path) -> None:
        self.root = root  # the client's host_volumes_dir: mkdir volumes live at root/<ID>
        self.found: dict[str, DynamicVolumeInfo] = {}
        self._failed: set[str] = set()  # volumes already logged as failing, so each logs once

    def fingerprint(self) -> dict[str, DynamicVolumeInfo]:
        return dict(self.found)

    def sync(self, listed: list[NodeHostVolumeJson]) -> bool:
        """Act on the servers' list; True when the node's HostVolumes changed (register again)."""
        found: dict[str, DynamicVolumeInfo] = {}
        for volume in listed:
            path = self._realize(volume)
            if path is not None:
                found[volume["Name"]] = DynamicVolumeInfo(
                    Name=volume["Name"], Path=path, ReadOnly=False, ID=volume["ID"]
                )
        self._remove_unlisted({v["ID"] for v in listed})
        changed = found != self.found
        self.found = found
        return changed

    def _realize(self, volume: NodeHostVolumeJson) -> str | None:
        try:
            if volume["PluginID"] == MKDIR:
                return str(self._mkdir(volume))
            path = Path(volume["HostPath"])
            if not path.is_dir():
                raise OSError(f"host path {path} is not an existing directory")
            return str(path)
        except (OSError, ValueError) as err:
            if volume["ID"] not in self._failed:
                self._failed.add(volume["ID"])
                log.warning("host volume not ready", volume_id=volume["ID"], name=volume["Name"], error=str(err))
            return None

    def _mkdir(self, volume: NodeHostVolumeJson) -> Path:
        """Nomad's mkdir plugin: the directory, with the `mode`, `uid` and `gid` parameters."""
        params = volume["Parameters"]
        path = self.root / str(uuid.UUID(volume["ID"]))  # a UUID: never a path outside the root
        mode = int(params["mode"], 8) if "mode" in params else DEFAULT_MODE
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, mode)
        if "uid" in params or "gid" in params:
            os.chown(path, int(params.get("uid", "-1")), int(params.get("gid", "-1")))
        return path

    def _remove_unlisted(self, listed: set[str]) -> None:
        """A mkdir volume deleted on the servers: its directory goes (only UUID-named ones under
        our own root; anything else there was not made by us)."""
        if not self.root.is_dir():
            return
        for entry in self.root.iterdir():
            if entry.name in listed or not entry.is_dir() or not _is_uuid(entry.name):
                continue
            shutil.rmtree(entry, ignore_errors=True)
            log.info("host volume directory removed", path=str(entry))


def _is_uuid(name: str) -> bool:
    try:
        return str(uuid.UUID(name)) == name
    except ValueError:
        return False
