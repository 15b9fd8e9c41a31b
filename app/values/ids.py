"""Identifiers: random UUIDs and node secrets."""

from __future__ import annotations

import hashlib
import hmac
import uuid


def new_id() -> uuid.UUID:
    """A random UUID (version 4), as Nomad's IDs are. The CLI prints an ID's first 8 characters
    and operators type them back, so those must tell objects apart: time-ordered UUIDv7s (used
    here until 2026-11-29 for index locality) shared them for about a minute, so every
    evaluation of a burst matched the same short ID. Nothing orders by evaluation ID: lists and
    their pages go by (create_index, id), and the locks take id order only to be consistent.
    Allocations and deployments (app/scheduler/shuffle.py) and nodes were random already."""
    return uuid.uuid4()


def secret_hash(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def secret_matches(secret: str, stored_hash: str | None) -> bool:
    """`secret` hashes to `stored_hash`, compared in constant time (no early exit on the first
    differing character, so answer times say nothing about how close a guess came)."""
    if stored_hash is None:
        return False
    return hmac.compare_digest(secret_hash(secret).encode(), stored_hash.encode())
