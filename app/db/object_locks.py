"""Serializes the writers of one object that may not exist yet.

A row lock (SELECT ... FOR UPDATE) orders writers of an existing row, but locks nothing when
the row is absent: two first registrations of the same job ID would both insert. The global
state-index lock used to hide that by running every writer one at a time; without it, writes
that create an object on first use take a transaction-level advisory lock on the object's key
first. Writers of other objects never wait for it. The two-key form keeps these locks apart
from the leadership locks (app.db.leadership), which use the one-key form."""

from __future__ import annotations

from enum import IntEnum

from sqlalchemy.orm import Session

from app.store.sql import query


class ObjectKind(IntEnum):
    """The first advisory-lock key: which kind of object the second key names."""

    JOB = 1
    NODE = 2
    ACL_BOOTSTRAP = 3
    VARIABLE = 4  # key: namespace:path
    KEYRING = 5  # key: '' (the one keyring: its first key, rotations)


def lock_object(session: Session, kind: ObjectKind, key: str) -> None:
    """Wait until no other transaction is writing this object, and hold it until commit."""
    session.execute(query("lock_object"), {"kind": int(kind), "key": key})
