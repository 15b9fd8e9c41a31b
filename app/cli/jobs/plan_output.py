"""`corral job plan` output in Nomad's layout: the diff with per-group update counts, the
scheduler dry-run verdict, the preemptions table, and the check-index hint."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, cast

from app.cli.jobs.diff_output import format_job_diff
from app.wire.job_diff import JobDiffJson

# Nomad's wording of DesiredTGUpdates in the task group line (printed in alphabetical order).
UPDATE_WORDS = (
    ("Place", "create"),
    ("Stop", "destroy"),
    ("Migrate", "migrate"),
    ("InPlaceUpdate", "in-place update"),
    ("DestructiveUpdate", "create/destroy update"),
    ("Canary", "canary"),
    ("Ignore", "ignore"),
)
CHANGE_KEYS = ("Place", "Stop", "Migrate", "DestructiveUpdate", "Canary")


def has_changes(response: Mapping[str, Any]) -> bool:
    """Nomad's exit code rule: 1 when allocations would be created or destroyed."""
    updates = (response.get("Annotations") or {}).get("DesiredTGUpdates") or {}
    return any(u.get(key, 0) for u in updates.values() for key in CHANGE_KEYS)


def render(response: Mapping[str, Any], job_id: str, file: str, diff: bool = True) -> str:
    """Nomad's plan output; without the diff (-diff=false) it opens with the dry-run verdict."""
    lines = [*_diff(response, job_id), ""] if diff else []
    lines += [*_dry_run(response), *_preemptions(response), ""]
    index = response.get("JobModifyIndex", 0)
    lines += [
        f"Job Modify Index: {index}",
        "To submit the job with version verification run:",
        "",
        f"corral job run -check-index {index} {file}",
        "",
        "When running the job with the check-index flag, the job will only be run if the",
        "job modify index given matches the server-side version. If the index has",
        "changed, another user has modified the job and the plan's results are",
        "potentially invalid.",
    ]
    return "\n".join(lines)


def _diff(response: Mapping[str, Any], job_id: str) -> Iterator[str]:
    """Nomad's formatJobDiff of the plan's diff; each group's line carries its update counts
    (the diff's Updates, or DesiredTGUpdates from a server that annotates no group)."""
    diff: Mapping[str, Any] = response.get("Diff") or {"Type": "None", "ID": job_id}
    updates = (response.get("Annotations") or {}).get("DesiredTGUpdates") or {}
    groups = {g["Name"]: dict(g) for g in diff.get("TaskGroups") or ()}
    for name in sorted(set(updates) - set(groups)):
        groups[name] = {"Type": "None", "Name": name, "Fields": None, "Objects": None, "Tasks": None}
    for name, group in groups.items():
        if group.get("Updates") is None:
            group["Updates"] = _words(updates.get(name) or {})
    whole = {**diff, "ID": diff.get("ID") or job_id, "TaskGroups": [groups[name] for name in sorted(groups)]}
    yield from format_job_diff(cast(JobDiffJson, whole)).rstrip("\n").split("\n")


def _words(update: Mapping[str, int]) -> dict[str, int]:
    return {word: update[key] for key, word in UPDATE_WORDS if update.get(key)}


def _dry_run(response: Mapping[str, Any]) -> Iterator[str]:
    yield "Scheduler dry-run:"
    failed = response.get("FailedTGAllocs") or {}
    if not failed:
        yield "- All tasks successfully allocated."
        return
    yield "- WARNING: Failed to place all allocations."
    for group, metric in sorted(failed.items()):
        count = metric.get("CoalescedFailures", 0) + 1
        yield f'  Task Group "{group}" (failed to place {count} allocation{"s" if count != 1 else ""}):'
        yield from _metric_lines(metric)


def _metric_lines(metric: Mapping[str, Any]) -> Iterator[str]:
    if not metric.get("NodesEvaluated"):
        yield "    * No nodes were eligible for evaluation"
    for dc, available in sorted((metric.get("NodesAvailable") or {}).items()):
        if available == 0:
            yield f'    * No nodes are available in datacenter "{dc}"'
    for constraint, count in sorted((metric.get("ConstraintFiltered") or {}).items()):
        yield f'    * Constraint "{constraint}": {count} nodes excluded by filter'
    if metric.get("NodesExhausted"):
        yield f"    * Resources exhausted on {metric['NodesExhausted']} nodes"
    for dimension, count in sorted((metric.get("DimensionExhausted") or {}).items()):
        yield f'    * Dimension "{dimension}" exhausted on {count} nodes'


def _preemptions(response: Mapping[str, Any]) -> Iterator[str]:
    allocs = (response.get("Annotations") or {}).get("PreemptedAllocs") or []
    if not allocs:
        return
    rows = [("Alloc ID", "Job ID", "Task Group")] + [(a["ID"][:8], a["JobID"], a["TaskGroup"]) for a in allocs]
    widths = [max(len(r[i]) for r in rows) for i in range(2)]
    yield ""
    yield "Preemptions:"
    yield ""
    for alloc_id, job_id, group in rows:
        yield f"{alloc_id:<{widths[0]}}  {job_id:<{widths[1]}}  {group}"
