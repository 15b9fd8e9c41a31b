"""Sticky host volumes (Nomad 1.10): what a placement claims, and the claims a pass reads.

A group whose host `volume` block says `sticky = true` keeps to the dynamic host volume its
first allocation got: the applier records a claim when it commits that placement, and every
later placement of the group must go to a node holding a claimed volume."""

from __future__ import annotations

import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class ClaimedVolume:
    """A dynamic host volume a new allocation of a sticky group was placed with: the applier
    writes (or moves) the group's claim on it with the allocation."""

    volume_id: uuid.UUID
    name: str


@dataclass(frozen=True)
class VolumeClaim:
    """A stored claim of the pass's job, with the node its volume lives on."""

    id: uuid.UUID
    task_group: str
    alloc_id: uuid.UUID
    volume_id: uuid.UUID
    volume_name: str
    node_id: uuid.UUID
