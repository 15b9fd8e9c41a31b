"""The keyring's root key: 32 bytes that wrap every data key the database holds, so a reader of
the database alone decrypts nothing.

It lives where the database cannot reach it, as the link secret does (app/acl/link_secret.py):
CORRAL_KEYRING_KEY, the file CORRAL_KEYRING_KEY_FILE, or (neither set) <data_dir>/keyring.key,
which `corral server` creates 0600 on its first start. Every server of a cluster must hold the
same root key: a key one server wrapped is unwrapped by all the others."""

from __future__ import annotations

import secrets
from pathlib import Path

import structlog

from app.acl.link_secret import ensure_default_file, read_secret_file
from app.settings.config import Settings

log = structlog.get_logger(__name__)
DEFAULT_FILE = "keyring.key"
KEY_BYTES = 32


class RootKeyError(ValueError):
    """The configured root key cannot be used; the message names the setting."""


def _decoded(value: str, where: str) -> bytes:
    text = value.strip()
    try:
        key = bytes.fromhex(text)
    except ValueError:
        raise RootKeyError(f"{where}: the keyring root key must be {KEY_BYTES * 2} hex characters") from None
    if len(key) != KEY_BYTES:
        raise RootKeyError(f"{where}: the keyring root key must be {KEY_BYTES * 2} hex characters, got {len(text)}")
    return key


def _read(path: Path, where: str) -> bytes:
    return _decoded(read_secret_file(path, where, "keyring root key", RootKeyError), where)


def configured(settings: Settings) -> bytes | None:
    """The root key the settings name (CORRAL_KEYRING_KEY, then CORRAL_KEYRING_KEY_FILE), or None."""
    if settings.keyring_key is not None:
        return _decoded(settings.keyring_key.get_secret_value(), "CORRAL_KEYRING_KEY")
    if settings.keyring_key_file is not None:
        return _read(settings.keyring_key_file, "CORRAL_KEYRING_KEY_FILE")
    return None


def for_server(settings: Settings) -> Settings:
    """The settings `corral server` runs with: CORRAL_KEYRING_KEY_FILE pointing at the default
    file when no root key is configured, so every worker process reads the same one. Checks the
    configured key now, so a bad one stops the server before it serves."""
    if configured(settings) is not None:
        return settings
    path, made = ensure_default_file(settings.data_dir, DEFAULT_FILE)
    log.warning(
        "the keyring root key (which wraps the keys that encrypt variables) is in the data directory; servers on "
        "several hosts must share one: copy it and set CORRAL_KEYRING_KEY_FILE on each; keep it out of backups "
        "of the database",
        path=str(path.resolve()),
        created=made,
    )
    updated = settings.model_copy(update={"keyring_key_file": path.resolve()})
    configured(updated)
    return updated


def for_app(settings: Settings) -> bytes:
    """The root key an API process uses. Without one configured (an application built by a
    test, not by `corral server`) the process makes its own: keys it creates are readable by
    this process only."""
    found = configured(settings)
    if found is not None:
        return found
    log.warning("no keyring root key configured; using one of this process only (corral server configures one)")
    return secrets.token_bytes(KEY_BYTES)
