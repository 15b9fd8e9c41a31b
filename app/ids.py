"""Identifiers: time-ordered UUIDs and node secrets."""

from __future__ import annotations

import hashlib
import hmac
import os
import time
import uuid


def new_id() -> uuid.UUID:
    """A UUIDv7: time-ordered, so new rows land at the right edge of the primary-key
    index instead of scattering (the bloat random UUID keys cause on hot tables)."""
    millis = time.time_ns() // 1_000_000
    rand = int.from_bytes(os.urandom(10), "big")
    value = (millis & ((1 << 48) - 1)) << 80
    value |= 0x7 << 76
    value |= (rand >> 68) << 64 & ((1 << 76) - (1 << 64))
    value |= 0b10 << 62
    value |= rand & ((1 << 62) - 1)
    return uuid.UUID(int=value)


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(secret: str, stored_hash: str | None) -> bool:
    """`secret` hashes to `stored_hash`, compared in constant time (no early exit on the first
    differing character, so answer times say nothing about how close a guess came)."""
    if stored_hash is None:
        return False
    return hmac.compare_digest(secret_hash(secret).encode(), stored_hash.encode())
