"""Seeded, self-contained randomness: node order, new allocation IDs and dynamic ports.

The scheduler must be a pure function of its inputs, so nothing here touches global state.
The seed mixes the evaluation ID with the snapshot index, as Nomad does, so a retried
evaluation and two workers racing on the same job explore nodes in different orders."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15

# Independent streams, so adding a placement never changes the node order and vice versa.
NODE_ORDER, ALLOC_IDS, PORTS = 1, 2, 3


def seed_for(eval_id: uuid.UUID, snapshot_index: int) -> int:
    """The eval ID's last 8 bytes XOR the state index."""
    return (int.from_bytes(eval_id.bytes[8:], "big") ^ snapshot_index) & _MASK64


class Rng:
    """splitmix64: tiny, fast, and good enough for shuffling and picking ports."""

    def __init__(self, seed: int, stream: int = 0) -> None:
        self._state = (seed ^ (stream * 0xD1B54A32D192ED03)) & _MASK64

    def next64(self) -> int:
        self._state = (self._state + _GOLDEN) & _MASK64
        z = self._state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK64
        return z ^ (z >> 31)

    def below(self, n: int) -> int:
        """A number in [0, n); the modulo bias is irrelevant for n far below 2**64."""
        return self.next64() % n


def shuffled(items: Sequence[T], rng: Rng) -> list[T]:
    """Fisher-Yates over a copy."""
    out = list(items)
    for i in range(len(out) - 1, 0, -1):
        j = rng.below(i + 1)
        out[i], out[j] = out[j], out[i]
    return out


class IdSource:
    """Deterministic version-4 UUIDs for the allocations one pass creates."""

    def __init__(self, seed: int) -> None:
        self._rng = Rng(seed, ALLOC_IDS)

    def next(self) -> uuid.UUID:
        return uuid.UUID(int=(self._rng.next64() << 64) | self._rng.next64(), version=4)
