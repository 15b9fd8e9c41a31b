"""Sticky host volumes (Nomad 1.10's HostVolumeChecker with task group claims): a group whose
volume block says `sticky = true` keeps to the dynamic host volumes it has claimed.

A claim is met while the plan so far keeps a live allocation of its group on the claimed
volume's node; a placement of the group may take a volume of that name only if every claim is
met (then any node with such a volume will do, as for the group's first placement) or the
volume is one of the unmet claims'. Claims whose allocation is no longer known (garbage
collected) are ignored, as Nomad's scheduler ignores them. Unlike Nomad's checker, claims are
matched per group and per volume name, so one sticky volume's claims do not bind another's."""

from __future__ import annotations

import uuid
from collections import defaultdict
from collections.abc import Callable, Collection, Iterable

from app.structs import VolumeClaim

# This job's live allocations of a group on a node, in the plan as built so far.
LiveOn = Callable[[uuid.UUID, str], int]


class StickyVolumes:
    def __init__(self, claims: Iterable[VolumeClaim], known_allocs: Collection[uuid.UUID], live_on: LiveOn) -> None:
        self._claims: dict[tuple[str, str], list[VolumeClaim]] = defaultdict(list)
        for claim in claims:
            if claim.alloc_id in known_allocs:
                self._claims[(claim.task_group, claim.volume_name)].append(claim)
        self._live_on = live_on

    def allows(self, group: str, name: str, volume_id: uuid.UUID) -> bool:
        """Whether a placement of `group` may mount the volume `volume_id` named `name`."""
        claims = self._claims.get((group, name))
        if not claims:
            return True
        unmet = [c for c in claims if self._live_on(c.node_id, group) == 0]
        return not unmet or any(c.volume_id == volume_id for c in unmet)


NO_CLAIMS = StickyVolumes((), (), lambda _node, _group: 0)
