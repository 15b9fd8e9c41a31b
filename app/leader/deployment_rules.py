"""The deployment watcher's decision for one running deployment (Nomad's deploymentwatcher),
pure: from its groups and their allocations' health, whether to fail it, promote it, replace
unhealthy allocations, move progress deadlines, or evaluate the job for the next batch. The
I/O step is app/leader/deployment_watch.py."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from app.structs import DeploymentGroup

FAILED_PROGRESS = "Failed due to progress deadline"
FAILED_UNHEALTHY = "Failed due to unhealthy allocations"


@dataclass(frozen=True)
class GroupHealth:
    healthy: int = 0
    healthy_canaries: int = 0
    unhealthy: tuple[uuid.UUID, ...] = ()  # not yet marked for replacement
    unhealthy_total: int = 0
    latest_healthy_ns: int = 0
    latest_health_index: int = 0


@dataclass(frozen=True)
class Decision:
    fail: str | None = None
    promote: bool = False
    reschedule: tuple[uuid.UUID, ...] = ()
    evaluate: bool = False
    groups: Mapping[str, DeploymentGroup] = field(default_factory=dict)  # with moved progress deadlines

    @property
    def empty(self) -> bool:
        return not (self.fail or self.promote or self.reschedule or self.evaluate or self.groups)


def with_progress(group: DeploymentGroup, latest_healthy_ns: int) -> DeploymentGroup:
    """The progress deadline moves on with every allocation that turns healthy."""
    if group.progress_deadline_ns == 0 or latest_healthy_ns == 0:
        return group
    moved = latest_healthy_ns + group.progress_deadline_ns
    return replace(group, require_progress_by_ns=max(group.require_progress_by_ns, moved))


def decide(
    groups: Mapping[str, DeploymentGroup], health: Mapping[str, GroupHealth], latest_eval_index: int, now_ns: int
) -> Decision:
    """What to do with one running deployment, from its groups and their allocations' health."""
    fail: str | None = None
    reschedule: list[uuid.UUID] = []
    moved_groups: dict[str, DeploymentGroup] = {}
    evaluate = False
    for name, group in groups.items():
        seen = health[name]
        moved = with_progress(group, seen.latest_healthy_ns)
        if moved != group:
            moved_groups[name] = moved
        evaluate = evaluate or seen.latest_health_index > latest_eval_index
        if moved.progress_deadline_ns == 0 and seen.unhealthy_total > 0:
            fail = FAILED_UNHEALTHY
        elif moved.progress_deadline_ns > 0:
            reschedule.extend(seen.unhealthy)
            if not _done(moved, seen) and moved.require_progress_by_ns and now_ns > moved.require_progress_by_ns:
                fail = FAILED_PROGRESS
    if fail:
        return Decision(fail=fail, groups=moved_groups)
    return Decision(
        promote=_auto_promote(groups, health), reschedule=tuple(reschedule), evaluate=evaluate, groups=moved_groups
    )


def _done(group: DeploymentGroup, seen: GroupHealth) -> bool:
    """Nothing left to wait for before the progress deadline. A group whose canaries are all
    healthy waits for its promotion, not for its deadline."""
    waiting_for_promotion = (
        group.desired_canaries > 0 and not group.promoted and seen.healthy_canaries >= group.desired_canaries
    )
    return waiting_for_promotion or (
        seen.healthy >= max(group.desired_total, group.desired_canaries)
        and (group.desired_canaries == 0 or group.promoted)
    )


def _auto_promote(groups: Mapping[str, DeploymentGroup], health: Mapping[str, GroupHealth]) -> bool:
    """Every group waiting for promotion auto-promotes and has all its canaries healthy."""
    waiting = {n: g for n, g in groups.items() if g.desired_canaries > 0 and not g.promoted}
    return bool(waiting) and all(
        g.auto_promote and health[n].healthy_canaries >= g.desired_canaries for n, g in waiting.items()
    )
