"""The `docker` driver's task config, as Nomad's docker plugin reads it: parsed and checked
before anything touches the daemon, so a bad job file fails with a StartError naming the key.

Pure: no daemon, no filesystem. Host paths are resolved against the task's directory (as Nomad
resolves a relative `volumes` entry) and must stay inside the allocation's directory unless the
client enables host volumes (Nomad's `volumes { enabled = true }` plugin option)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from client.drivers.base import StartError, seconds

# The keys Nomad's docker driver reads that this driver acts on; anything else is refused.
KNOWN_KEYS = frozenset(
    {
        "image",
        "command",
        "args",
        "entrypoint",
        "ports",
        "volumes",
        "mount",
        "network_mode",
        "labels",
        "work_dir",
        "auth",
        "force_pull",
        "image_pull_timeout",
    }
)
AUTH_KEYS = frozenset({"username", "password", "email", "server_address"})
MOUNT_KEYS = frozenset({"type", "source", "target", "readonly", "bind_options"})
DEFAULT_PULL_TIMEOUT_S = 300.0  # Nomad's image_pull_timeout default, "5m"
NETWORK_MODES = ("bridge", "host", "none", "default")


@dataclass(frozen=True)
class Bind:
    """A host path bound into the container."""

    host: str
    container: str
    read_only: bool = False


@dataclass(frozen=True)
class Auth:
    username: str = ""
    password: str = ""
    email: str = ""
    server_address: str = ""

    def as_sdk(self) -> dict[str, str]:
        """The SDK's auth_config (only what was given)."""
        given = {
            "username": self.username,
            "password": self.password,
            "email": self.email,
            "serveraddress": self.server_address,
        }
        return {key: value for key, value in given.items() if value}


@dataclass(frozen=True)
class DockerConfig:
    image: str
    command: str = ""
    args: tuple[str, ...] = ()
    entrypoint: tuple[str, ...] | None = None
    ports: tuple[str, ...] = ()
    binds: tuple[Bind, ...] = ()
    network_mode: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    work_dir: str = ""
    auth: Auth | None = None
    force_pull: bool = False
    image_pull_timeout_s: float = DEFAULT_PULL_TIMEOUT_S

    def cmd(self) -> list[str] | None:
        """Nomad's: the command and its args; the args alone; or None (the image's CMD)."""
        if self.command:
            return [self.command, *self.args]
        return list(self.args) if self.args else None


def parse(config: Mapping[str, Any], task_dir: str, alloc_dir: str, host_volumes: bool = False) -> DockerConfig:
    """The task's `config` block; StartError naming the key at fault."""
    unknown = sorted(set(config) - KNOWN_KEYS)
    if unknown:
        raise StartError(
            f"docker config: unsupported key(s) {', '.join(unknown)}; this driver knows {', '.join(sorted(KNOWN_KEYS))}"
        )
    image = config.get("image")
    if not isinstance(image, str) or not image.strip():
        raise StartError("config.image is required: the image to run, e.g. busybox:1.36")
    network_mode = _string(config, "network_mode")
    if network_mode and network_mode not in NETWORK_MODES and not network_mode.startswith("container:"):
        raise StartError(f"config.network_mode {network_mode!r} must be one of {', '.join(NETWORK_MODES)}")
    return DockerConfig(
        image=image.strip(),
        command=_string(config, "command"),
        args=_strings(config, "args") or (),
        entrypoint=_strings(config, "entrypoint"),
        ports=_strings(config, "ports") or (),
        binds=(
            *(_volume(v, task_dir, alloc_dir, host_volumes) for v in _strings(config, "volumes") or ()),
            *(_mount(m, i, task_dir, alloc_dir, host_volumes) for i, m in enumerate(_blocks(config, "mount"))),
        ),
        network_mode=network_mode,
        labels=_labels(config),
        work_dir=_string(config, "work_dir"),
        auth=_auth(config),
        force_pull=_bool(config, "force_pull"),
        image_pull_timeout_s=_pull_timeout(config),
    )


def _string(config: Mapping[str, Any], key: str) -> str:
    value = config.get(key, "")
    if not isinstance(value, str):
        raise StartError(f"config.{key} must be a string")
    return value


def _bool(config: Mapping[str, Any], key: str) -> bool:
    value = config.get(key, False)
    if not isinstance(value, bool):
        raise StartError(f"config.{key} must be true or false")
    return value


def _strings(config: Mapping[str, Any], key: str) -> tuple[str, ...] | None:
    """A list of strings (numbers are taken as written, as HCL would); None when absent."""
    if key not in config or config[key] is None:
        return None
    value = config[key]
    if not isinstance(value, list) or not all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in value
    ):
        raise StartError(f"config.{key} must be a list of strings")
    return tuple(str(v) for v in value)


def _blocks(config: Mapping[str, Any], key: str) -> list[Mapping[str, Any]]:
    """A nested block: the HCL parser gives a list of objects; JSON jobs may give one object."""
    value = config.get(key)
    if value is None:
        return []
    items = [value] if isinstance(value, Mapping) else value
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise StartError(f"config.{key} must be a block (an object)")
    return items


def _one_block(config: Mapping[str, Any], key: str) -> Mapping[str, Any] | None:
    blocks = _blocks(config, key)
    if len(blocks) > 1:
        raise StartError(f"config.{key} may be given once")
    return blocks[0] if blocks else None


def _labels(config: Mapping[str, Any]) -> dict[str, str]:
    labels: dict[str, str] = {}
    for block in _blocks(config, "labels"):
        for name, value in block.items():
            if not isinstance(value, str | int | float) or isinstance(value, bool):
                raise StartError(f"config.labels.{name} must be a string")
            labels[str(name)] = str(value)
    return labels


def _auth(config: Mapping[str, Any]) -> Auth | None:
    block = _one_block(config, "auth")
    if block is None:
        return None
    unknown = sorted(set(block) - AUTH_KEYS)
    if unknown:
        raise StartError(f"config.auth: unknown key(s) {', '.join(unknown)}")
    for key, value in block.items():
        if not isinstance(value, str):
            raise StartError(f"config.auth.{key} must be a string")
    return Auth(**{k: str(v) for k, v in block.items()})


def _pull_timeout(config: Mapping[str, Any]) -> float:
    if "image_pull_timeout" not in config:
        return DEFAULT_PULL_TIMEOUT_S
    timeout = seconds(config["image_pull_timeout"], "image_pull_timeout")
    if timeout <= 0:
        raise StartError("config.image_pull_timeout must be positive")
    return timeout


def host_path(raw: str, key: str, task_dir: str, alloc_dir: str, host_volumes: bool) -> str:
    """A bind's host side: relative paths are the task directory's (Nomad's rule); outside the
    allocation's directory only when the client enables host volumes."""
    if not raw:
        raise StartError(f"{key}: the host path is empty")
    path = PurePosixPath(raw) if raw.startswith("/") else PurePosixPath(task_dir) / raw
    normal = _normalize(path)
    if not host_volumes and not _inside(normal, _normalize(PurePosixPath(alloc_dir))):
        raise StartError(
            f"{key}: volumes are not enabled; cannot mount host path {raw!r} "
            "(relative paths inside the allocation directory are allowed; a client enables others "
            "with docker_volumes_enabled)"
        )
    return str(normal)


def _normalize(path: PurePosixPath) -> PurePosixPath:
    parts: list[str] = []
    for part in path.parts[1:]:
        if part == "..":
            if parts:
                parts.pop()
        elif part not in (".", ""):
            parts.append(part)
    return PurePosixPath("/", *parts)


def _inside(path: PurePosixPath, root: PurePosixPath) -> bool:
    return path == root or root in path.parents


def _container_path(raw: str, key: str) -> str:
    if not raw.startswith("/"):
        raise StartError(f"{key}: the container path {raw!r} must be absolute")
    return raw


def _volume(entry: str, task_dir: str, alloc_dir: str, host_volumes: bool) -> Bind:
    """`host:container` or `host:container:ro|rw` (Nomad's `volumes` strings)."""
    parts = entry.split(":")
    if len(parts) not in (2, 3) or (len(parts) == 3 and parts[2] not in ("ro", "rw")):
        raise StartError(f"config.volumes entry {entry!r} must be host_path:container_path[:ro|rw]")
    key = f"config.volumes {entry!r}"
    return Bind(
        host_path(parts[0], key, task_dir, alloc_dir, host_volumes),
        _container_path(parts[1], key),
        read_only=len(parts) == 3 and parts[2] == "ro",
    )


def _mount(block: Mapping[str, Any], index: int, task_dir: str, alloc_dir: str, host_volumes: bool) -> Bind:
    """A `mount` block of type bind (volume and tmpfs mounts are not supported here)."""
    key = f"config.mount[{index}]"
    unknown = sorted(set(block) - MOUNT_KEYS)
    if unknown:
        raise StartError(f"{key}: unsupported key(s) {', '.join(unknown)}")
    kind = block.get("type", "volume")  # Nomad's default type
    if kind != "bind":
        raise StartError(f'{key}: type {kind!r} is not supported; only type = "bind"')
    source, target, read_only = block.get("source"), block.get("target"), block.get("readonly", False)
    if not isinstance(source, str) or not isinstance(target, str):
        raise StartError(f"{key}: source and target are required strings")
    if not isinstance(read_only, bool):
        raise StartError(f"{key}.readonly must be true or false")
    return Bind(host_path(source, key, task_dir, alloc_dir, host_volumes), _container_path(target, key), read_only)
