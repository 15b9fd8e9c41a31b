"""What the `docker` driver asks the daemon to create for a task: pure, from the TaskSpec and
its parsed config. Nomad's choices: the container is `<task>-<alloc id>`; the allocation's
alloc/ and the task's local/ and secrets/ are bound at /alloc, /local and /secrets; memory is
hard-limited at memory_max (else memory) with swap at the same limit, so a task over it is
OOM-killed rather than swapped; CPU is relative shares of the task's MHz; labels name the
allocation so a restarted client re-attaches and a destroyed allocation's containers are found."""

from __future__ import annotations

from typing import Any

from client.drivers.base import PortMapping, StartError, TaskSpec
from client.drivers.docker_config import Bind, DockerConfig

PAUSE_PREFIX = "nomad_init_"  # Nomad's name for an allocation's pause container


def pause_network_mode(alloc_id: str) -> str:
    """A docker task in its group's namespace: the pause container's (docker_pause.py)."""
    return f"container:{PAUSE_PREFIX}{alloc_id}"


LABEL_ALLOC_ID = "com.hashicorp.nomad.alloc_id"
LABEL_TASK_NAME = "com.hashicorp.nomad.task_name"
# Which client's allocation directory the container belongs to: a daemon may serve several
# clients (tests, a laptop), and each cleans up only its own containers.
LABEL_ALLOC_DIR = "corral.alloc_dir"
# Nomad's labels from the task's environment.
ENV_LABELS = {
    "com.hashicorp.nomad.job_id": "NOMAD_JOB_ID",
    "com.hashicorp.nomad.job_name": "NOMAD_JOB_NAME",
    "com.hashicorp.nomad.namespace": "NOMAD_NAMESPACE",
    "com.hashicorp.nomad.task_group_name": "NOMAD_GROUP_NAME",
}
MIN_CPU_SHARES = 2  # the kernel's (and docker's) floor
MIB = 1024 * 1024


def container_name(task: TaskSpec) -> str:
    return f"{task.name}-{task.alloc_id}"


def labels(task: TaskSpec, config: DockerConfig) -> dict[str, str]:
    ours = {LABEL_ALLOC_ID: task.alloc_id, LABEL_TASK_NAME: task.name}
    ours.update({label: task.env[name] for label, name in ENV_LABELS.items() if task.env.get(name)})
    if task.alloc_dir is not None:
        ours[LABEL_ALLOC_DIR] = str(task.alloc_dir)
    return {**config.labels, **ours}  # the task's own labels may not pose as ours


def binds(task: TaskSpec, config: DockerConfig) -> list[str]:
    """Nomad's task directories, then host volumes (TaskSpec.mounts), then the config's."""
    if task.alloc_dir is None:
        raise StartError("the docker driver needs the allocation's directory")
    task_dir = task.alloc_dir / task.name
    ours = [
        Bind(str(task.alloc_dir / "alloc"), "/alloc"),
        Bind(str(task_dir / "local"), "/local"),
        Bind(str(task_dir / "secrets"), "/secrets"),
    ]
    extra = [Bind(m.host_path, m.task_path, m.read_only) for m in task.mounts]
    return [f"{b.host}:{b.container}:{'ro' if b.read_only else 'rw'}" for b in (*ours, *extra, *config.binds)]


def memory(task: TaskSpec) -> dict[str, Any]:
    """mem_limit = memory_max (else memory), its swap the same; memory as the reservation
    when memory_max oversubscribes it (Nomad's)."""
    limits = task.limits
    hard = limits.memory_max_mb or limits.memory_mb
    if hard <= 0:
        return {}
    out: dict[str, Any] = {"mem_limit": hard * MIB, "memswap_limit": hard * MIB}
    if limits.memory_max_mb and limits.memory_mb:
        out["mem_reservation"] = limits.memory_mb * MIB
    return out


def network(task: TaskSpec, config: DockerConfig) -> tuple[str, dict[str, list[tuple[str, int]]]]:
    """The container's network mode and published ports. A group network in bridge (or none)
    mode whose namespace the client made (task.netns) runs the container in it, through the
    allocation's pause container (docker_pause.py); without one (a TaskSpec built by hand),
    bridge runs it on docker's bridge with every group port published (host_ip:value -> to);
    in host mode (the default) the container runs where config.network_mode says (docker's
    bridge unless set) with the ports config.ports lists published."""
    by_label = {p.label: p for p in task.ports}
    missing = [label for label in config.ports if label not in by_label]
    if missing:
        raise StartError(f"config.ports: port(s) {', '.join(missing)} not found, check the group's network block")
    group = task.network_mode or "host"
    if group == "bridge":
        if config.network_mode not in ("", "bridge", "default"):
            raise StartError(
                f'config.network_mode {config.network_mode!r} conflicts with the group network mode "bridge"'
            )
        if task.netns:  # the group's namespace (its pause container's): CNI's portmap maps the ports
            return pause_network_mode(task.alloc_id), {}
        return "bridge", published(task.ports)
    if group == "none":
        if config.network_mode not in ("", "none"):
            raise StartError(
                f'config.network_mode {config.network_mode!r} conflicts with the group network mode "none"'
            )
        return (pause_network_mode(task.alloc_id) if task.netns else "none"), {}
    if group != "host":
        raise StartError(f"group network mode {group!r} is not supported by the docker driver")
    mode = config.network_mode or "bridge"
    if mode in ("host", "none") or mode.startswith("container:"):
        return mode, {}
    return mode, published([by_label[label] for label in config.ports])


def published(ports: list[PortMapping] | tuple[PortMapping, ...]) -> dict[str, list[tuple[str, int]]]:
    """Each port on TCP and UDP, as Nomad publishes them: container port `to` (the host port
    when `to` is unset or -1) from host_ip:host_port."""
    out: dict[str, list[tuple[str, int]]] = {}
    for port in ports:
        inside = port.to if port.to > 0 else port.host_port
        for protocol in ("tcp", "udp"):
            out.setdefault(f"{inside}/{protocol}", []).append((port.host_ip, port.host_port))
    return out


def create_kwargs(task: TaskSpec, config: DockerConfig) -> dict[str, Any]:
    """Keyword arguments for the SDK's containers.create."""
    mode, ports = network(task, config)
    kwargs: dict[str, Any] = {
        "image": config.image,
        "command": config.cmd(),
        "name": container_name(task),
        "environment": dict(task.env),
        "labels": labels(task, config),
        "volumes": binds(task, config),
        "network_mode": mode,
        "detach": True,
        "stdin_open": False,
        "tty": False,
        **memory(task),
    }
    if ports:
        kwargs["ports"] = ports
    if config.entrypoint is not None:
        kwargs["entrypoint"] = list(config.entrypoint)
    if config.work_dir:
        kwargs["working_dir"] = config.work_dir
    if task.user:
        kwargs["user"] = task.user
    if task.limits.cpu_mhz > 0:
        kwargs["cpu_shares"] = max(MIN_CPU_SHARES, task.limits.cpu_mhz)
    return kwargs
