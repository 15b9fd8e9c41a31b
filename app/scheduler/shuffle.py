"""Seeded, self-contained randomness: node order, new allocation IDs and dynamic ports.

The scheduler must be a pure function of its inputs, so nothing here touches global state.
The seed mixes the evaluation ID with the snapshot index, as Nomad does, so a retried
evaluation and two workers racing on the same job explore nodes in different orders."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import TypeVar, overload

T = TypeVar("T")
_MASK64 = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15

# Independent streams, so adding a placement never changes the node order and vice versa.
NODE_ORDER, ALLOC_IDS, PORTS = 1, 2, 3


def seed_for(eval_id: uuid.UUID, snapshot_index: int) -> int:
    """The eval ID's last 8 bytes XOR the state index."""
    return (int.from_bytes(eval_id.bytes[8:], "big") ^ snapshot_index) & _MASK64


def id_seed(seed: int, now_ns: int) -> int:
    """The new IDs' seed: the pass seed mixed with the pass's clock. Two passes of one evaluation
    may read snapshots with the same index (the safe index lags a writer still in flight, or a
    redelivery reads the same state) while the second sees the first's allocations: seeded by
    the pass seed alone, it drew the same IDs again, and a placement took an existing
    allocation's ID (written as an in-place update of it: the job stayed one short)."""
    return Rng(seed ^ now_ns, ALLOC_IDS).next64()


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
    """Version-4 UUIDs for the allocations (and deployment) one pass creates, seeded so a pass is
    a pure function of its inputs. Never one of `taken` (the IDs the snapshot already holds,
    read on the first draw): a placement with an existing allocation's ID would be written as an
    in-place update of that allocation."""

    def __init__(self, seed: int, taken: Iterable[uuid.UUID] = ()) -> None:
        self._rng = Rng(seed, ALLOC_IDS)
        self._pending_taken: Iterable[uuid.UUID] | None = taken
        self._taken: frozenset[uuid.UUID] = frozenset()

    def next(self) -> uuid.UUID:
        if self._pending_taken is not None:
            self._taken, self._pending_taken = frozenset(self._pending_taken), None
        while True:
            drawn = uuid.UUID(int=(self._rng.next64() << 64) | self._rng.next64(), version=4)
            if drawn not in self._taken:
                return drawn
