"""Nomad's computed node class: a hash of everything feasibility can depend on except
unique.* values, so feasibility results can be cached per class instead of per node."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping

from app.wire.node import NodeDeviceResourceJson

UNIQUE_PREFIX = "unique."


def computed_class(
    *,
    datacenter: str,
    node_class: str,
    node_pool: str,
    attributes: Mapping[str, str],
    meta: Mapping[str, str],
    devices: list[NodeDeviceResourceJson] | None = None,
) -> str:
    material = {
        "datacenter": datacenter,
        "class": node_class,
        "pool": node_pool,
        "attributes": _without_unique(attributes),
        "meta": _without_unique(meta),
        "devices": devices or [],
    }
    digest = hashlib.sha256(json.dumps(material, sort_keys=True, separators=(",", ":")).encode())
    return "v1:" + str(int.from_bytes(digest.digest()[:8], "big"))


def _without_unique(values: Mapping[str, str]) -> dict[str, str]:
    return {k: v for k, v in values.items() if not k.startswith(UNIQUE_PREFIX)}
