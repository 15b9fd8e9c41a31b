"""Task lifecycle inside an allocation: Nomad's coordinator phases (prestart before main,
poststart after main started, poststop after the rest is dead) and its kill rules."""

from __future__ import annotations

from typing import Any

import pytest

from client.tasks.lifecycle import (
    OPEN,
    LifecycleError,
    State,
    advance,
    kill_order,
    kill_reason,
    restarts_on_success,
    stage_of,
)

pytestmark = pytest.mark.unit

STAGES = {
    "init": "prestart",
    "proxy": "prestart_sidecar",
    "app": "main",
    "announce": "poststart",
    "watch": "poststart_sidecar",
    "cleanup": "poststop",
}


def states(**overrides: str) -> dict[str, dict[str, Any]]:
    """Every task pending unless named: `running`, `dead` (successful) or `failed`."""
    out = {}
    for name in STAGES:
        kind = overrides.get(name, "pending")
        out[name] = {"State": "dead" if kind in ("dead", "failed") else kind, "Failed": kind == "failed"}
    return out


def test_stage_of_reads_hook_and_sidecar() -> None:
    assert stage_of({}) == "main"
    assert stage_of({"Lifecycle": {"Hook": "prestart"}}) == "prestart"
    assert stage_of({"Lifecycle": {"Hook": "prestart", "Sidecar": True}}) == "prestart_sidecar"
    assert stage_of({"Lifecycle": {"Hook": "poststart", "Sidecar": True}}) == "poststart_sidecar"
    assert stage_of({"Lifecycle": {"Hook": "poststop", "Sidecar": True}}) == "poststop"
    with pytest.raises(LifecycleError, match="prestart, poststart, poststop"):
        stage_of({"Lifecycle": {"Hook": "midstart"}})


def test_phases_follow_nomads_order() -> None:
    phase = advance("init", states(), STAGES)
    assert phase == "prestart" and OPEN[phase] == {"prestart", "prestart_sidecar"}
    # The sidecar running is not enough: the ephemeral prestart task must finish successfully.
    assert advance(phase, states(proxy="running", init="running"), STAGES) == "prestart"
    assert advance(phase, states(proxy="running", init="failed"), STAGES) == "prestart"
    phase = advance(phase, states(proxy="running", init="dead"), STAGES)
    assert phase == "main" and OPEN[phase] == {"prestart_sidecar", "main"}
    phase = advance(phase, states(proxy="running", init="dead", app="running"), STAGES)
    assert phase == "poststart" and "poststart" in OPEN[phase] and "poststop" not in OPEN[phase]
    started = states(proxy="running", init="dead", app="running", announce="dead", watch="running")
    phase = advance(phase, started, STAGES)
    assert phase == "wait_alloc" and "poststart" not in OPEN[phase]
    everything_else_dead = states(proxy="dead", init="dead", app="dead", announce="dead", watch="dead")
    assert advance(phase, everything_else_dead, STAGES) == "poststop" and OPEN["poststop"] == {"poststop"}


def test_phase_never_goes_back_and_a_dead_allocation_runs_its_poststop_tasks_from_any_phase() -> None:
    assert advance("main", states(proxy="pending", init="dead"), STAGES) == "main"
    failed_early = states(init="failed", proxy="dead", app="dead", announce="dead", watch="dead")
    assert advance("prestart", failed_early, STAGES) == "poststop"
    plain = {"a": "main", "b": "main"}
    assert advance("init", {"a": {"State": "pending"}, "b": {"State": "pending"}}, plain) == "main"
    assert advance("main", {"a": {"State": "running"}, "b": {"State": "running"}}, plain) == "wait_alloc"


def test_kill_reasons() -> None:
    leaders: frozenset[str] = frozenset()
    failed = kill_reason(states(init="failed"), STAGES, leaders)
    assert failed == ("Sibling Task Failed", "Task's sibling 'init' failed")
    assert kill_reason(states(init="dead", app="running", proxy="running"), STAGES, leaders) is None
    sidecars_left = states(init="dead", app="dead", proxy="running", announce="dead", watch="running")
    assert kill_reason(sidecars_left, STAGES, leaders) == ("Main Tasks Dead", "Main tasks in the group died")
    two = {"leader": "main", "helper": "main"}
    dead_leader: dict[str, State] = {"leader": {"State": "dead", "Failed": False}, "helper": {"State": "running"}}
    assert kill_reason(dead_leader, two, frozenset({"leader"})) == ("Leader Task Dead", "Leader Task in Group dead")
    assert kill_reason(dead_leader, two, frozenset()) is None
    # Only the poststop task left alive: nothing to kill, it is meant to run now.
    all_done = states(init="dead", proxy="dead", app="failed", announce="dead", watch="dead", cleanup="running")
    assert kill_reason(all_done, STAGES, leaders) is None


def test_kill_order_is_leader_then_main_then_sidecars_and_never_poststop() -> None:
    assert kill_order(STAGES, frozenset({"app"})) == [["app"], ["init", "announce"], ["proxy", "watch"]]
    assert kill_order({"a": "main", "z": "poststop"}, frozenset()) == [["a"]]


def test_which_tasks_restart_after_exiting_zero() -> None:
    assert [restarts_on_success(s, batch=False) for s in ("main", "prestart", "prestart_sidecar", "poststop")] == [
        True,
        False,
        True,
        False,
    ]
    assert restarts_on_success("main", batch=True) is False
    assert restarts_on_success("poststart_sidecar", batch=True) is True
