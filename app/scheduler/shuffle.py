"""Seeded, self-contained randomness: node order, new allocation IDs and dynamic ports.

The scheduler must be a pure function of its inputs, so nothing here touches global state.
The seed mixes the evaluation ID with the snapshot index, as Nomad does, so a retried
evaluation and two workers racing on the same job explore nodes in different orders."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import TypeVar, overload

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


class LazyShuffle(Sequence[T]):
    """A Fisher-Yates permutation drawn only as far as it is read.

    The placement walk usually stops after a few nodes (Nomad's candidate limit), so shuffling
    all of a large cluster for every evaluation would be most of the pass's cost. Reading item i
    fixes items 0..i for good; the order is a pure function of the items and the generator."""

    def __init__(self, items: Sequence[T], rng: Rng) -> None:
        self._items = list(items)
        self._rng = rng
        self._drawn = 0

    def __len__(self) -> int:
        return len(self._items)

    def members(self) -> list[T]:
        """The items in no particular order, for counting without drawing the permutation."""
        return list(self._items)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self._items)))]
        if index < 0:
            index += len(self._items)
        if not 0 <= index < len(self._items):
            raise IndexError(index)
        self._draw_through(index)
        return self._items[index]

    def _draw_through(self, index: int) -> None:
        items, size = self._items, len(self._items)
        while self._drawn <= index:
            i = self._drawn
            j = i + self._rng.below(size - i)
            items[i], items[j] = items[j], items[i]
            self._drawn += 1


class IdSource:
    """Deterministic version-4 UUIDs for the allocations one pass creates."""

    def __init__(self, seed: int) -> None:
        self._rng = Rng(seed, ALLOC_IDS)

    def next(self) -> uuid.UUID:
        return uuid.UUID(int=(self._rng.next64() << 64) | self._rng.next64(), version=4)
