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


@dataclass
class Decision:
    fail: str | None = None
    promote: bool = False
    reschedule: list[uuid.UUID] = field(default_factory=list)
    evaluate: bool = False
    groups: dict[str, DeploymentGroup] = field(default_factory=dict)  # with moved progress deadlines

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
    decision = Decision()
    for name, group in groups.items():
        seen = health[name]
        moved = with_progress(group, seen.latest_healthy_ns)
        if moved != group:
            decision.groups[name] = moved
        if seen.latest_health_index > latest_eval_index:
            decision.evaluate = True
        if moved.progress_deadline_ns == 0 and seen.unhealthy_total > 0:
            decision.fail = FAILED_UNHEALTHY
        elif moved.progress_deadline_ns > 0:
            decision.reschedule.extend(seen.unhealthy)
            # A group whose canaries are all healthy waits for its promotion, not for its deadline.
            waiting_for_promotion = (
                moved.desired_canaries > 0 and not moved.promoted and seen.healthy_canaries >= moved.desired_canaries
            )
            done = waiting_for_promotion or (
                seen.healthy >= max(moved.desired_total, moved.desired_canaries)
                and (moved.desired_canaries == 0 or moved.promoted)
            )
            if not done and moved.require_progress_by_ns and now_ns > moved.require_progress_by_ns:
                decision.fail = FAILED_PROGRESS
    waiting = {n: g for n, g in groups.items() if g.desired_canaries > 0 and not g.promoted}
    if (
        waiting
        and all(g.auto_promote for g in waiting.values())
        and all(health[n].healthy_canaries >= g.desired_canaries for n, g in waiting.items())
    ):
        decision.promote = True
    if decision.fail:
        decision.promote, decision.reschedule, decision.evaluate = False, [], False
    return decision
