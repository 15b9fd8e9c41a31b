"""A task's `user`: whether this client lets a driver run as it (Nomad's client options
`user.denylist` and `user.checked_drivers`), and who it is on this host."""

from __future__ import annotations

import os
import pwd
from dataclasses import dataclass

from client.drivers.base import StartError

# Nomad's defaults: the users no checked driver may run as, and the drivers that are checked
# (drivers that isolate the task; raw_exec is not checked unless the operator adds it).
DEFAULT_DENYLIST = ("root", "Administrator")
DEFAULT_CHECKED_DRIVERS = ("exec", "qemu", "java")


@dataclass(frozen=True)
class UserPolicy:
    denylist: frozenset[str] = frozenset(DEFAULT_DENYLIST)
    checked_drivers: frozenset[str] = frozenset(DEFAULT_CHECKED_DRIVERS)

    def check(self, driver: str, user: str) -> None:
        """StartError when the task's user is one this client forbids for its driver
        (Nomad's message: running as user "root" is disallowed)."""
        if driver in self.checked_drivers and user in self.denylist:
            raise StartError(f'running as user "{user}" is disallowed')


def parse_list(value: object, key: str) -> frozenset[str]:
    """Nomad's comma-separated option values ("root, admin"); a JSON list is accepted too."""
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list) and all(isinstance(v, str) for v in value):
        items = value
    else:
        raise ValueError(f"{key}: must be a comma-separated string of names")
    return frozenset(item.strip() for item in items if item.strip())


@dataclass(frozen=True)
class Identity:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]


def identity(user: str) -> Identity:
    """The host account a task runs as: a user name, or a numeric uid (with its account's group
    when it has one). StartError when this host has no such user."""
    try:
        entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, OverflowError):
        if user.isdigit():
            uid = int(user)
            return Identity(user, uid, uid, ())
        raise StartError(f"user {user!r} does not exist on this node") from None
    groups = tuple(g for g in os.getgrouplist(entry.pw_name, entry.pw_gid) if g != entry.pw_gid)
    return Identity(entry.pw_name, entry.pw_uid, entry.pw_gid, groups)
