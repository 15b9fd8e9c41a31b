"""Host ports: the static ones a group asks for and dynamic ones picked per node."""

from __future__ import annotations

from app.scheduler.shuffle import Rng
from app.structs import Node, NodeUsage, Port, TaskGroup

_RANDOM_TRIES = 20


def static_ports(group: TaskGroup) -> tuple[int, ...]:
    return tuple(p.value for n in group.networks for p in n.reserved_ports if p.value)


def dynamic_count(group: TaskGroup) -> int:
    return sum(len(n.dynamic_ports) for n in group.networks)


def dynamic_free(node: Node, usage: NodeUsage, static: tuple[int, ...]) -> int:
    """How many ports of the node's dynamic range are neither used, reserved nor asked statically."""
    low, high = node.min_dynamic_port, node.max_dynamic_port
    taken = {p for p in (*usage.ports, *node.reserved_ports, *static) if low <= p <= high}
    return max(0, high - low + 1 - len(taken))


def assign(group: TaskGroup, node: Node, usage: NodeUsage, rng: Rng) -> tuple[Port, ...]:
    """Static ports as given; dynamic ones drawn at random from the range (so concurrent
    workers rarely collide), falling back to a scan. Call only after dynamic_free was checked."""
    if not group.networks:
        return ()
    taken = set(usage.ports) | set(node.reserved_ports) | set(static_ports(group))
    out: list[Port] = []
    for network in group.networks:
        out.extend(network.reserved_ports)
        for port in network.dynamic_ports:
            value = _pick(node, taken, rng)
            taken.add(value)
            out.append(Port(port.label, value, port.to, port.host_network))
    return tuple(out)


def _pick(node: Node, taken: set[int], rng: Rng) -> int:
    low, high = node.min_dynamic_port, node.max_dynamic_port
    for _ in range(_RANDOM_TRIES):
        value = low + rng.below(high - low + 1)
        if value not in taken:
            return value
    return next(p for p in range(low, high + 1) if p not in taken)
