"""One-time tokens (Nomad's OneTimeToken): a short-lived secret that stands for an ACL token
and is exchanged for it once, so the web UI can be handed a login without the token's secret
in a URL. Only the one-time secret's SHA-256 is stored, as for tokens; the exchange must hand
back the token's SecretID, which corral stores nowhere, so the row keeps it sealed (AES-GCM)
under a key derived from the one-time secret: the database alone cannot open it."""

from __future__ import annotations

import hashlib
import os
import uuid
from datetime import datetime, timedelta

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from sqlalchemy import delete
from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import AclOneTimeToken, AclToken
from app.values.errors import Forbidden, InvalidInput
from app.values.ids import secret_hash

LIFETIME = timedelta(minutes=10)  # Nomad's one-time token TTL
_NONCE = 12


def _key(one_time_secret: str) -> bytes:
    # Not the lookup hash (sha256 of the secret alone), which the row stores in the clear.
    return hashlib.sha256(b"corral one-time token seal\x00" + one_time_secret.encode()).digest()


def create(session: Session, accessor: uuid.UUID, token_secret: str, now: datetime) -> tuple[AclOneTimeToken, str]:
    """A new one-time secret for the token `accessor`; expired secrets are swept on the way."""
    index = next_index(session, ["acl_tokens"])
    session.execute(delete(AclOneTimeToken).where(AclOneTimeToken.expires_at <= now))
    secret = str(uuid.uuid4())
    nonce = os.urandom(_NONCE)
    row = AclOneTimeToken(
        secret_hash=secret_hash(secret),
        accessor_id=accessor,
        sealed_secret=nonce + AESGCM(_key(secret)).encrypt(nonce, token_secret.encode(), accessor.bytes),
        expires_at=now + LIFETIME,
        create_index=index,
        modify_index=index,
    )
    session.add(row)
    session.flush()
    return row, secret


def exchange(session: Session, secret: str, now: datetime) -> tuple[AclToken, str]:
    """The token the secret stands for and its SecretID; the one-time secret is used up."""
    next_index(session, ["acl_tokens"])
    gone = session.execute(
        delete(AclOneTimeToken).where(AclOneTimeToken.secret_hash == secret_hash(secret)).returning(AclOneTimeToken)
    ).scalar_one_or_none()
    if gone is None:
        raise Forbidden.of("OneTimeSecretID", "Permission denied")
    if gone.expires_at <= now:
        raise InvalidInput.of("OneTimeSecretID", "one-time token is expired")
    token = session.get(AclToken, gone.accessor_id)
    sealed = gone.sealed_secret
    try:
        token_secret = AESGCM(_key(secret)).decrypt(sealed[:_NONCE], sealed[_NONCE:], gone.accessor_id.bytes)
    except InvalidTag:
        token = None
    if token is None:  # the cascade removes secrets of deleted tokens; kept for the types
        raise Forbidden.of("OneTimeSecretID", "Permission denied")
    return token, token_secret.decode()
