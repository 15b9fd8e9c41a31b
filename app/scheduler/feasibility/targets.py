"""Interpolation of constraint targets like ${attr.kernel.name} against one node."""

from __future__ import annotations

from app.structs import Node

# Targets that read per-node unique values defeat caching feasibility per computed class.
_UNIQUE_PREFIXES = ("${node.unique.", "${attr.unique.", "${meta.unique.")


def resolve(target: str, node: Node) -> str | None:
    """The target's value on `node`; literals resolve to themselves, unknown keys to None."""
    if not (target.startswith("${") and target.endswith("}")):
        return target
    name = target[2:-1]
    if name.startswith("attr."):
        return node.attributes.get(name[5:])
    if name.startswith("meta."):
        return node.meta.get(name[5:])
    return _node_field(name, node)


def _node_field(name: str, node: Node) -> str | None:
    if name == "node.unique.id":
        return str(node.id)
    if name == "node.unique.name":
        return node.name
    if name == "node.datacenter":
        return node.datacenter
    if name == "node.class":
        return node.node_class
    if name == "node.pool":
        return node.node_pool
    return None


def escapes_class(target: str) -> bool:
    return target.startswith(_UNIQUE_PREFIXES)
