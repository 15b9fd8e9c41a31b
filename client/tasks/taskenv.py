"""A task's environment and `${…}` interpolation, as Nomad's client builds them (client/taskenv).

Pure functions over the allocation's JSON, the task's JSON and the node's facts; nothing here
reads the client's own environment. The environment is built from scratch: a minimal PATH,
HOME and TMPDIR inside the task's directory, the `NOMAD_*` variables, the merged meta as
`NOMAD_META_*`, the allocation's ports, then the task's `env` (which may override any of them).
"""

from __future__ import annotations

import base64
import binascii
import re
import string
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# Nomad's ReplaceEnv: a dotted name in ${…}, looked up in flat maps; anything else stays as written.
SIMPLE = re.compile(r"\$\{[a-zA-Z0-9_\-.]+\}")
# Keys under these prefixes are cleaned as Nomad cleans them (a port label or meta key may hold
# characters an environment variable name may not).
CLEANED_PREFIXES = ("NOMAD_ADDR_", "NOMAD_IP_", "NOMAD_PORT_", "NOMAD_HOST_PORT_", "NOMAD_META_")
_NAME_CHARS = frozenset(string.ascii_letters + "_.")
_ALLOC_INDEX = re.compile(r"\[(\d+)\]$")


@dataclass(frozen=True)
class NodeInfo:
    """What a task may see of the node it runs on (never its secret)."""

    id: str = ""
    name: str = ""
    datacenter: str = ""
    node_class: str = ""
    node_pool: str = ""
    attributes: dict[str, str] = field(default_factory=dict)
    meta: dict[str, str] = field(default_factory=dict)
    # Node.HostVolumes: what a group's host volumes are mounted from (not in the environment).
    host_volumes: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def of(cls, node: Mapping[str, Any] | None) -> NodeInfo:
        """From a Nomad node object (the body the client registers) or a saved NodeInfo."""
        node = node or {}
        if "attributes" in node:  # saved by `saved()`
            return cls(**{k: node[k] for k in asdict(cls()) if k in node})
        return cls(
            id=str(node.get("ID") or ""),
            name=str(node.get("Name") or ""),
            datacenter=str(node.get("Datacenter") or ""),
            node_class=str(node.get("NodeClass") or ""),
            node_pool=str(node.get("NodePool") or ""),
            attributes={str(k): str(v) for k, v in (node.get("Attributes") or {}).items()},
            meta={str(k): str(v) for k, v in (node.get("Meta") or {}).items()},
            host_volumes={str(k): dict(v) for k, v in (node.get("HostVolumes") or {}).items() if isinstance(v, dict)},
        )

    def saved(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class TaskPaths:
    """Where the task's directories are (on the host: raw_exec has no filesystem isolation)."""

    alloc_dir: Path  # the allocation's shared alloc/
    task_dir: Path  # <alloc>/<task>, the task's working directory

    @property
    def local(self) -> Path:
        return self.task_dir / "local"

    @property
    def secrets(self) -> Path:
        return self.task_dir / "secrets"

    @property
    def tmp(self) -> Path:
        return self.task_dir / "tmp"


def alloc_index(name: str) -> int:
    """`job.group[3]` -> 3 (Nomad's Allocation.Index)."""
    match = _ALLOC_INDEX.search(name)
    return int(match.group(1)) if match else 0


def node_attributes(node: NodeInfo, region: str) -> dict[str, str]:
    """The flat `node.*`, `attr.*` and `meta.*` (node meta) names interpolation can see."""
    attrs = {"node.region": region} if region else {}
    attrs.update(
        {
            "node.unique.id": node.id,
            "node.unique.name": node.name,
            "node.class": node.node_class,
            "node.datacenter": node.datacenter,
            "node.pool": node.node_pool,
        }
    )
    attrs.update({f"attr.{k}": v for k, v in node.attributes.items()})
    attrs.update({f"meta.{k}": v for k, v in node.meta.items()})
    return attrs


def group_of(job: Mapping[str, Any], name: str) -> dict[str, Any]:
    group = next((g for g in job.get("TaskGroups") or [] if g.get("Name") == name), None)
    return dict(group or {})


def combined_meta(job: Mapping[str, Any], group_name: str, task: Mapping[str, Any]) -> dict[str, str]:
    """Task meta over group meta over job meta (Nomad's CombinedTaskMeta)."""
    group = group_of(job, group_name)
    merged: dict[str, str] = {}
    for layer in (job.get("Meta"), group.get("Meta"), task.get("Meta")):
        merged.update({str(k): str(v) for k, v in (layer or {}).items()})
    return merged


def replace_env(text: str, *lookups: Mapping[str, str]) -> str:
    """Fill each `${name}` from the first map that has it; unknown names stay as written."""

    def one(match: re.Match[str]) -> str:
        name = match.group(0)[2:-1]
        for lookup in lookups:
            if name in lookup:
                return lookup[name]
        return match.group(0)

    return SIMPLE.sub(one, text)


def clean_env_name(name: str) -> str:
    """Nomad's CleanEnvVar: every byte that is not a letter, digit, `_` or `.` becomes `_`."""
    out = bytearray(name.encode())
    for i, byte in enumerate(out):
        ch = chr(byte)
        if not (ch in _NAME_CHARS or (i > 0 and ch in string.digits)):
            out[i] = ord("_")
    return out.decode()


def _port_env(ports: list[dict[str, Any]], host_ip: str) -> dict[str, str]:
    env: dict[str, str] = {}
    for port in ports:
        label, value, to = str(port.get("Label", "")), int(port.get("Value") or 0), int(port.get("To") or 0)
        if not label:
            continue
        address = f"[{host_ip}]:{value}" if ":" in host_ip else f"{host_ip}:{value}"
        env[f"NOMAD_ADDR_{label}"] = env[f"NOMAD_HOST_ADDR_{label}"] = address
        env[f"NOMAD_IP_{label}"] = env[f"NOMAD_HOST_IP_{label}"] = host_ip
        env[f"NOMAD_PORT_{label}"] = env[f"NOMAD_ALLOC_PORT_{label}"] = str(to if to > 0 else value)
        env[f"NOMAD_HOST_PORT_{label}"] = str(value)
    return env


def cpuset_text(cores: list[int]) -> str:
    """Core IDs as Linux's cpuset list format, which Nomad's NOMAD_CPU_CORES uses: "0-1,4"."""
    ranges: list[list[int]] = []
    for core in sorted(set(cores)):
        if ranges and core == ranges[-1][1] + 1:
            ranges[-1][1] = core
        else:
            ranges.append([core, core])
    return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in ranges)


def _cores_env(alloc: Mapping[str, Any], task: str) -> dict[str, str]:
    """A task given whole cores: NOMAD_CPU_CORES lists them and NOMAD_CPU_LIMIT is the MHz they
    count for (the allocation's AllocatedResources.Tasks.<task>.Cpu)."""
    tasks = (alloc.get("AllocatedResources") or {}).get("Tasks") or {}
    cpu = ((tasks.get(task) if isinstance(tasks, Mapping) else None) or {}).get("Cpu") or {}
    cores = [int(core) for core in cpu.get("ReservedCores") or ()]
    if not cores:
        return {}
    return {"NOMAD_CPU_CORES": cpuset_text(cores), "NOMAD_CPU_LIMIT": str(int(cpu.get("CpuShares") or 0))}


def node_ip(node: NodeInfo) -> str:
    """The address the node's ports are on (Nomad's port HostIP)."""
    return node.attributes.get("unique.network.ip-address") or "127.0.0.1"


def build_env(
    alloc: Mapping[str, Any], task: Mapping[str, Any], node: NodeInfo, paths: TaskPaths, host_env: bool = True
) -> tuple[dict[str, str], dict[str, str]]:
    """The task's environment and the node attributes interpolation sees, in Nomad's order:
    the NOMAD_* variables, ports, meta (interpolated), PATH/HOME/TMPDIR (where Nomad adds the
    host's environment; not for a task in an image, `host_env` False, whose image has its own),
    then the task's env (interpolated, so `PATH = "/opt/bin:${PATH}"` works)."""
    job = alloc.get("Job") or {}
    region = str(job.get("Region") or "global")
    attrs = node_attributes(node, region)
    alloc_id, name = str(alloc.get("ID") or ""), str(alloc.get("Name") or "")
    resources = task.get("Resources") or {}
    env: dict[str, str] = {
        "NOMAD_ALLOC_DIR": str(paths.alloc_dir),
        "NOMAD_TASK_DIR": str(paths.local),
        "NOMAD_SECRETS_DIR": str(paths.secrets),
        "NOMAD_ALLOC_ID": alloc_id,
        "NOMAD_SHORT_ALLOC_ID": alloc_id[:8],
        "NOMAD_ALLOC_NAME": name,
        "NOMAD_ALLOC_INDEX": str(alloc_index(name)),
        "NOMAD_GROUP_NAME": str(alloc.get("TaskGroup") or ""),
        "NOMAD_TASK_NAME": str(task.get("Name") or ""),
        "NOMAD_JOB_ID": str(job.get("ID") or alloc.get("JobID") or ""),
        "NOMAD_JOB_NAME": str(job.get("Name") or job.get("ID") or ""),
        "NOMAD_NAMESPACE": str(alloc.get("Namespace") or job.get("Namespace") or "default"),
        "NOMAD_REGION": region,
        "NOMAD_DC": node.datacenter,
    }
    if job.get("ParentID"):
        env["NOMAD_JOB_PARENT_ID"] = str(job["ParentID"])
    for key, variable in (("CPU", "NOMAD_CPU_LIMIT"), ("MemoryMB", "NOMAD_MEMORY_LIMIT")):
        if resources.get(key):
            env[variable] = str(resources[key])
    if resources.get("MemoryMaxMB"):
        env["NOMAD_MEMORY_MAX_LIMIT"] = str(resources["MemoryMaxMB"])
    env.update(_cores_env(alloc, str(task.get("Name") or "")))
    env = {k: v for k, v in env.items() if v}
    shared = (alloc.get("AllocatedResources") or {}).get("Shared") or {}
    env.update(_port_env(list(shared.get("Ports") or []), node_ip(node)))
    meta: dict[str, str] = {}
    if job.get("Dispatched"):  # optional dispatch meta is always set, empty when not given
        for key in (job.get("ParameterizedJob") or {}).get("MetaOptional") or []:
            meta[f"NOMAD_META_{str(key).upper()}"] = meta[f"NOMAD_META_{key}"] = ""
    for key, value in combined_meta(job, str(alloc.get("TaskGroup") or ""), task).items():
        meta[f"NOMAD_META_{key.upper()}"] = meta[f"NOMAD_META_{key}"] = value
    base = dict(env)
    for key, value in meta.items():
        env[replace_env(key, attrs, base)] = replace_env(value, attrs, base)
    # Where Nomad adds the host's environment (only names not yet set), a minimal one instead.
    if host_env:
        for key, value in (("PATH", PATH), ("HOME", str(paths.local)), ("TMPDIR", str(paths.tmp))):
            env.setdefault(key, value)
    before_task = dict(env)
    for key, value in (task.get("Env") or {}).items():
        env[str(key)] = replace_env(str(value), attrs, before_task)
    cleaned = {(clean_env_name(k) if k.startswith(CLEANED_PREFIXES) else k): v for k, v in env.items()}
    return cleaned, attrs


# -- interpolation of a task's config (Nomad evaluates it as an HCL template) -----------------

_TEMPLATE = re.compile(r"\$\$\{|%%\{|\$\{([^{}]*)\}")
_ROOT = re.compile(r"\s*~?\s*([A-Za-z_][A-Za-z0-9_\-]*)")
_STEP = re.compile(r"\.([A-Za-z0-9_\-]+)|\[\s*\"((?:[^\"\\]|\\.)*)\"\s*\]|\[\s*(\d+)\s*\]")
_END = re.compile(r"\s*~?\s*$")


def _traversal(expression: str) -> list[str] | None:
    """`node.unique.name`, `attr["unique.hostname"]`, `env["HOME"]` -> its parts; None for any
    other expression (functions, operators), which stays as written."""
    root = _ROOT.match(expression)
    if root is None:
        return None
    parts, at = [root.group(1)], root.end()
    while True:
        step = _STEP.match(expression, at)
        if step is None:
            break
        parts.append(next(g for g in step.groups() if g is not None))
        at = step.end()
    return parts if _END.match(expression, at) else None


def resolve(parts: list[str], env: Mapping[str, str], attrs: Mapping[str, str]) -> str | None:
    """The value a traversal names in the task's variables, or None when it names nothing."""
    if parts[0] == "env":
        return env.get(parts[1]) if len(parts) == 2 else None
    if parts[0] == "node" and len(parts) > 2 and parts[1] in ("attr", "meta"):
        parts = parts[1:]  # node.attr.x and node.meta.x are attr.x and meta.x
    key = ".".join(parts)
    if key in env:
        return env[key]
    return attrs.get(key)


def interpolate(text: str, env: Mapping[str, str], attrs: Mapping[str, str]) -> str:
    """One string of a task's config: `${…}` filled in, `$${` and `%%{` unescaped; a reference
    to nothing (or any other expression) stays as written."""

    def one(match: re.Match[str]) -> str:
        whole = match.group(0)
        if whole == "$${":
            return "${"
        if whole == "%%{":
            return "%{"
        parts = _traversal(match.group(1))
        value = None if parts is None else resolve(parts, env, attrs)
        return whole if value is None else value

    return _TEMPLATE.sub(one, text)


def interpolate_config(value: Any, env: Mapping[str, str], attrs: Mapping[str, str]) -> Any:
    """Every string in a task's config (its command, args, nested blocks)."""
    if isinstance(value, str):
        return interpolate(value, env, attrs)
    if isinstance(value, list):
        return [interpolate_config(v, env, attrs) for v in value]
    if isinstance(value, dict):
        return {k: interpolate_config(v, env, attrs) for k, v in value.items()}
    return value


def dispatch_payload(job: Mapping[str, Any]) -> bytes:
    """A dispatched job's payload (base64 in the API, as Go encodes a []byte)."""
    raw = job.get("Payload")
    if not raw:
        return b""
    try:
        return base64.b64decode(str(raw), validate=True)
    except (binascii.Error, ValueError):
        return b""


def payload_path(paths: TaskPaths, file: str) -> Path | None:
    """Where `dispatch_payload { file }` goes: inside local/, or None if it would escape it."""
    if not file or "\x00" in file:
        return None
    target = (paths.local / file).resolve()
    local = paths.local.resolve()
    return target if target != local and target.is_relative_to(local) else None
