"""distinct_hosts and distinct_property: rules about where the job's other allocations
are, so they are checked per node against the plan in progress, never cached per class."""

from __future__ import annotations

from dataclasses import dataclass

from app.scheduler.feasibility.feasible import group_constraints
from app.scheduler.feasibility.targets import resolve
from app.scheduler.planstate import PlanState
from app.structs import Constraint, Job, Node, TaskGroup

DISTINCT_HOSTS, DISTINCT_PROPERTY = "distinct_hosts", "distinct_property"


@dataclass(frozen=True)
class PropertyLimit:
    target: str
    limit: int
    group: str | None  # None: counted over the whole job


@dataclass(frozen=True)
class DistinctRules:
    job_hosts: bool = False
    group_hosts: bool = False
    properties: tuple[PropertyLimit, ...] = ()

    def violation(self, node: Node, group: str, state: PlanState) -> str | None:
        if self.job_hosts and state.count_on(node.id) > 0:
            return DISTINCT_HOSTS
        if self.group_hosts and state.count_on(node.id, group) > 0:
            return DISTINCT_HOSTS
        for rule in self.properties:
            value = resolve(rule.target, node)
            if value is None or state.property_counts(rule.target, rule.group)[value] >= rule.limit:
                return DISTINCT_PROPERTY
        return None


def distinct_rules(job: Job, group: TaskGroup) -> DistinctRules:
    job_level, group_level = job.constraints, group_constraints(group)
    return DistinctRules(
        job_hosts=_has_hosts(job_level),
        group_hosts=_has_hosts(group_level),
        properties=tuple(_limits(job_level, None) + _limits(group_level, group.name)),
    )


def _has_hosts(constraints: tuple[Constraint, ...]) -> bool:
    # An explicit RTarget of "false" switches the rule off, as in Nomad.
    return any(c.operand == DISTINCT_HOSTS and c.rtarget.lower() != "false" for c in constraints)


def _limits(constraints: tuple[Constraint, ...], group: str | None) -> list[PropertyLimit]:
    return [
        PropertyLimit(c.ltarget, int(c.rtarget) if c.rtarget.isdigit() else 1, group)
        for c in constraints
        if c.operand == DISTINCT_PROPERTY
    ]
