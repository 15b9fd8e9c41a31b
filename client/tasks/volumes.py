"""A task's `volume_mount`s resolved against its group's `volume` requests and the node's
host volumes (Nomad's volume hook): the mounts its driver binds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from app.structs.groups import volume_source
from client.drivers import Mount, StartError


def task_mounts(
    group: Mapping[str, Any],
    task: Mapping[str, Any],
    host_volumes: Mapping[str, Mapping[str, Any]],
    alloc_name: str = "",
) -> tuple[Mount, ...]:
    """One Mount per volume_mount of a host volume; read-only when the node's volume, the
    group's request or the mount says so. A per_alloc request mounts the volume named after the
    allocation's index (`data[2]` for `web.db[2]`), as the scheduler placed it. CSI volumes are
    not mounted (the job was warned). StartError when the node lacks a volume it was placed for
    (its configuration changed)."""
    requests = group.get("Volumes") or {}
    mounts = []
    for mount in task.get("VolumeMounts") or ():
        request = requests.get(mount.get("Volume")) or {}
        if request.get("Type") != "host":
            continue
        source = volume_source(str(request.get("Source") or ""), bool(request.get("PerAlloc")), alloc_name)
        volume = host_volumes.get(source)
        if volume is None:
            raise StartError(f"host volume validation error: missing requested host volume {source!r}")
        read_only = bool(volume.get("ReadOnly") or request.get("ReadOnly") or mount.get("ReadOnly"))
        mounts.append(Mount(str(volume["Path"]), str(mount.get("Destination") or ""), read_only))
    return tuple(mounts)
