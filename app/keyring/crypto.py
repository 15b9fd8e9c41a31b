"""AES-256-GCM sealing with a random 96-bit nonce stored in front of the ciphertext. The
associated data binds a sealed value to where it belongs (a data key to its ID, a variable to
its namespace and path), so a value copied to another row does not open there."""

from __future__ import annotations

import os

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

NONCE_BYTES = 12
KEY_BYTES = 32


class SealError(ValueError):
    """A sealed value does not open with this key and associated data."""


def new_key() -> bytes:
    return AESGCM.generate_key(bit_length=KEY_BYTES * 8)


def seal(key: bytes, plaintext: bytes, associated: bytes) -> bytes:
    nonce = os.urandom(NONCE_BYTES)
    return nonce + AESGCM(key).encrypt(nonce, plaintext, associated)


def open_sealed(key: bytes, sealed: bytes, associated: bytes) -> bytes:
    if len(sealed) < NONCE_BYTES + 16:
        raise SealError("sealed value too short")
    try:
        return AESGCM(key).decrypt(sealed[:NONCE_BYTES], sealed[NONCE_BYTES:], associated)
    except InvalidTag:
        raise SealError("sealed value does not open with this key") from None
