"""The servers' link secret, from which each node's link key is derived (app/acl/client_link.py).

It lives where the database cannot reach it: CORRAL_LINK_KEY, the file CORRAL_LINK_KEY_FILE,
or (neither set) <data_dir>/link.key, which `corral server` creates 0600 on its first start.
Every server of a cluster must hold the same secret, as Nomad's servers share their gossip key:
a node registered through one server is proxied to by any other."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

import structlog

from app.settings.config import Settings

log = structlog.get_logger(__name__)
MIN_CHARS = 32
DEFAULT_FILE = "link.key"


class LinkSecretError(ValueError):
    """The configured secret cannot be used; the message names the setting."""


def _checked(value: str, where: str) -> bytes:
    secret = value.strip()
    if len(secret) < MIN_CHARS:
        raise LinkSecretError(f"{where}: the link secret must be at least {MIN_CHARS} characters, got {len(secret)}")
    return secret.encode()


def read_secret_file(path: Path, where: str, what: str, error: type[ValueError]) -> str:
    """A secret file's text (the link secret, the keyring's root key): `error` naming the
    setting when it cannot be read, a warning when other users may read it."""
    try:
        text = path.read_text()
        mode = path.stat().st_mode
    except (OSError, UnicodeDecodeError) as err:
        raise error(f"{where}: cannot read {path}: {err}") from None
    if mode & 0o077:
        log.warning(f"the {what} file is readable by other users; chmod 600 it", path=str(path))
    return text


def _read(path: Path, where: str) -> bytes:
    return _checked(read_secret_file(path, where, "link secret", LinkSecretError), where)


def configured(settings: Settings) -> bytes | None:
    """The secret the settings name (CORRAL_LINK_KEY, then CORRAL_LINK_KEY_FILE), or None."""
    if settings.link_key is not None:
        return _checked(settings.link_key.get_secret_value(), "CORRAL_LINK_KEY")
    if settings.link_key_file is not None:
        return _read(settings.link_key_file, "CORRAL_LINK_KEY_FILE")
    return None


def ensure_default_file(data_dir: Path, name: str = DEFAULT_FILE) -> tuple[Path, bool]:
    """<data_dir>/<name> (link.key), made (0600, 32 random bytes as hex) if missing; True when
    made here. Written aside and linked into place, so servers starting together on one data_dir
    end up with the same secret, never a half-written one. The keyring's root key file is made
    the same way (app/keyring/root_key.py)."""
    path = data_dir / name
    if path.exists():
        return path, False
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    partial = data_dir / f".{name}.{os.getpid()}.tmp"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.link(partial, path)
        made = True
    except FileExistsError:
        made = False  # another server made it first: use theirs
    finally:
        partial.unlink(missing_ok=True)
    return path, made


def for_server(settings: Settings) -> Settings:
    """The settings `corral server` runs with: CORRAL_LINK_KEY_FILE pointing at the default file
    when no secret is configured, so every worker process reads the same one. Checks the
    configured secret now, so a bad one stops the server before it serves."""
    if configured(settings) is not None:
        return settings
    path, made = ensure_default_file(settings.data_dir)
    log.warning(
        "the link secret (which keys the servers' requests to clients) is in the data directory; servers on "
        "several hosts must share one: copy it and set CORRAL_LINK_KEY_FILE on each",
        path=str(path.resolve()),
        created=made,
    )
    updated = settings.model_copy(update={"link_key_file": path.resolve()})
    configured(updated)
    return updated


def for_app(settings: Settings) -> bytes:
    """The secret an API process signs with. Without one configured (an application built by a
    test, not by `corral server`, which always configures one) the process makes its own: the
    links work, but only through this process."""
    found = configured(settings)
    if found is not None:
        return found
    log.warning("no link secret configured; using one of this process only (corral server configures one)")
    return secrets.token_hex(32).encode()
