"""Task lifecycle inside an allocation (Nomad's task coordinator and its kill rules), as pure
functions over task states.

Stages: `prestart` tasks (ephemeral: must finish successfully; `sidecar`: must be running) run
before the main tasks; `poststart` tasks once every main task has started; `poststop` tasks once
every other task is dead, whatever ended them. The phase only moves forward."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PRESTART, PRESTART_SIDECAR = "prestart", "prestart_sidecar"
MAIN = "main"
POSTSTART, POSTSTART_SIDECAR = "poststart", "poststart_sidecar"
POSTSTOP = "poststop"
HOOKS = ("prestart", "poststart", "poststop")

PHASES = ("init", "prestart", "main", "poststart", "wait_alloc", "poststop")
# Which stages may start in each phase (Nomad's gates).
OPEN: dict[str, frozenset[str]] = {
    "init": frozenset(),
    "prestart": frozenset({PRESTART, PRESTART_SIDECAR}),
    "main": frozenset({PRESTART_SIDECAR, MAIN}),
    "poststart": frozenset({PRESTART_SIDECAR, MAIN, POSTSTART, POSTSTART_SIDECAR}),
    "wait_alloc": frozenset({PRESTART_SIDECAR, MAIN, POSTSTART_SIDECAR}),
    "poststop": frozenset({POSTSTOP}),
}
SIDECARS = frozenset({PRESTART_SIDECAR, POSTSTART_SIDECAR})

State = Mapping[str, Any]  # a Nomad TaskState: State, Failed, …


class LifecycleError(ValueError):
    """A task's lifecycle block names no hook Nomad knows."""


def stage_of(task: Mapping[str, Any]) -> str:
    lifecycle = task.get("Lifecycle") or {}
    hook = lifecycle.get("Hook") or ""
    if not hook:
        return MAIN
    if hook not in HOOKS:
        raise LifecycleError(f"lifecycle hook {hook!r} must be one of {', '.join(HOOKS)}")
    sidecar = lifecycle.get("Sidecar") in (True, "true")
    if hook == "poststop":
        return POSTSTOP
    return f"{hook}_sidecar" if sidecar else hook


def restarts_on_success(stage: str, batch: bool) -> bool:
    """Whether a task that exits 0 is restarted (Nomad's restart tracker): sidecars always,
    main tasks of a service job, never ephemeral hooks or batch tasks."""
    if stage in SIDECARS:
        return True
    if stage == MAIN:
        return not batch
    return False


def _dead(state: State) -> bool:
    return state.get("State") == "dead"


def _done(phase: str, states: Mapping[str, State], stages: Mapping[str, str]) -> bool:
    def of(*wanted: str) -> list[State]:
        return [states[name] for name, stage in stages.items() if stage in wanted]

    if phase == "init":
        return all(s.get("State") == "pending" for s in states.values())
    if phase == "prestart":
        return all(_dead(s) and not s.get("Failed") for s in of(PRESTART)) and all(
            s.get("State") == "running" for s in of(PRESTART_SIDECAR)
        )
    if phase == "main":
        return all(s.get("State") != "pending" for s in of(MAIN))
    if phase == "poststart":
        return all(_dead(s) for s in of(POSTSTART))
    if phase == "wait_alloc":
        return alloc_done(states, stages)
    return False


def alloc_done(states: Mapping[str, State], stages: Mapping[str, str]) -> bool:
    """Every task but the poststop ones is dead."""
    return all(_dead(states[name]) for name, stage in stages.items() if stage != POSTSTOP)


def advance(phase: str, states: Mapping[str, State], stages: Mapping[str, str]) -> str:
    """The phase after these task states (Nomad's coordinator, one step at a time)."""
    while True:
        if phase != "poststop" and alloc_done(states, stages):
            return "poststop"
        if phase == "poststop" or not _done(phase, states, stages):
            return phase
        phase = PHASES[PHASES.index(phase) + 1]


def kill_reason(
    states: Mapping[str, State], stages: Mapping[str, str], leaders: frozenset[str]
) -> tuple[str, str] | None:
    """Why the live tasks (poststop ones aside) must be killed now, as a task event (type,
    message), or None: a task failed, the leader died, or only sidecars are left."""
    live = [name for name, stage in stages.items() if stage != POSTSTOP and not _dead(states[name])]
    if not live:
        return None
    for name, stage in stages.items():
        state = states[name]
        if stage == POSTSTOP or not _dead(state):
            continue
        if state.get("Failed"):
            return "Sibling Task Failed", f"Task's sibling {name!r} failed"
        if name in leaders:
            return "Leader Task Dead", "Leader Task in Group dead"
    has_sidecars = any(stage in SIDECARS for stage in stages.values())
    if has_sidecars and all(stages[name] in SIDECARS for name in live):
        return "Main Tasks Dead", "Main tasks in the group died"
    return None


def kill_order(stages: Mapping[str, str], leaders: frozenset[str]) -> list[list[str]]:
    """Who is killed first: the leader, then the other non-sidecar tasks, then the sidecars;
    poststop tasks are not killed (they run once the others are dead)."""
    first = [name for name in stages if name in leaders and stages[name] != POSTSTOP]
    rest = [name for name, stage in stages.items() if name not in leaders and stage not in SIDECARS | {POSTSTOP}]
    sidecars = [name for name, stage in stages.items() if name not in leaders and stage in SIDECARS]
    return [batch for batch in (first, rest, sidecars) if batch]
