"""What an exec task's chroot holds besides its own directory: the host paths of the client's
`chroot_env` (read-only), the allocation's shared alloc/ and the task's mounts."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path

from client.drivers.base import Mount

# Nomad's DefaultChrootEnv: host path -> path inside the chroot. Paths a host lacks are skipped.
DEFAULT_CHROOT_ENV: Mapping[str, str] = {
    "/bin": "/bin",
    "/etc": "/etc",
    "/lib": "/lib",
    "/lib32": "/lib32",
    "/lib64": "/lib64",
    "/run/resolvconf": "/run/resolvconf",
    "/sbin": "/sbin",
    "/usr": "/usr",
    "/run/systemd/resolve": "/run/systemd/resolve",
}

Bind = tuple[str, str, bool]  # host path, path inside the chroot, read-only


def binds(
    chroot_env: Mapping[str, str],
    shared_alloc: Path,
    mounts: tuple[Mount, ...] = (),
    exists: Callable[[str], bool] = os.path.exists,
) -> list[Bind]:
    """The bind mounts in mounting order: the chroot's host paths (those this host has), the
    shared alloc/ directory (writable, as Nomad's), then the task's own mounts."""
    found: list[Bind] = [(src, dst, True) for src, dst in sorted(chroot_env.items(), key=lambda i: i[1]) if exists(src)]
    found.append((str(shared_alloc), "/alloc", False))
    found.extend((m.host_path, m.task_path, m.read_only) for m in mounts)
    return found
