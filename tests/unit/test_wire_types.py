"""app/wire's TypedDicts against Nomad's api package (tests/support/nomad_api_types.py): each
struct's keys are Nomad's, with the few corral adds named here, and each status alias holds
the values the constants (and so the CHECK constraints) allow."""

from __future__ import annotations

import inspect
from types import ModuleType

import pytest
from typing_extensions import is_typeddict

from app.values import constants
from app.wire import allocation, deployment, evaluation, events, job, node
from tests.support.nomad_api_types import STRUCTS

pytestmark = pytest.mark.unit

MODULES: tuple[ModuleType, ...] = (job, allocation, node, evaluation, deployment, events)
# Nomad's struct where it is not the TypedDict's name less its suffix.
RENAMED = {
    "JobSpec": "Job",
    "TaskGroupSpec": "TaskGroup",
    "TaskSpec": "Task",
    "TaskLifecycleConfigSpec": "TaskLifecycle",
}
# Keys corral carries beyond the api package's, and why.
EXTRA: dict[str, set[str]] = {
    # nomad/structs keys the api package lacks (the job is served as nomad/structs encodes it).
    "Job": {"VaultToken", "ConsulToken"} - set(STRUCTS["Job"]),
    "RescheduleTracker": {"NextDelay", "NextRescheduleTime"},  # the delay chosen at failure
    "RescheduleEvent": {"Delay"},  # nomad/structs' RescheduleEvent.Delay
    "HostVolumeInfo": {"Name"},  # the client's host_volume block name
    # nomad/structs' Evaluation.LeaderACL (sent empty), and corral's lease of a pending evaluation.
    "Evaluation": {"LeaderACL", "LeaseExpiresAt"},
    # nomad/structs' Allocation keys the api package dropped (sent null or empty, as Nomad does).
    "Allocation": {"SharedResources", "AllocStates", "SigningKeyID"},
    # nomad/structs' Node keys the api package lacks (SecretID sent empty, as Nomad's Sanitize does).
    "Node": {"SecretID", "ComputedClass", "IdentitySigningKeyID", "LastMissedHeartbeatIndex", "LastAllocUpdateIndex"},
    "NodeListStub": {"HostVolumes"},  # the node's host volumes, which the CLI's node status lists
    "JobListStub": {"NodePool", "Multiregion"},  # nomad/structs' JobListStub keys the api package lacks
    "Event": {"Namespace"},  # nomad/structs' Event.Namespace
    "Deployment": {"EvalPriority"},  # nomad/structs' Deployment.EvalPriority
    "DeploymentState": {"AutoPromote"},  # nomad/structs' DeploymentState.AutoPromote
}
CORRAL_ONLY = {"CoreParamsJson"}  # evaluations.core_params: no Nomad struct


def _typed_dicts() -> list[tuple[str, type]]:
    found = []
    for module in MODULES:
        for name, value in inspect.getmembers(module, is_typeddict):
            if value.__module__ == module.__name__ and name not in CORRAL_ONLY:
                found.append((name, value))
    return found


def _struct(name: str) -> str:
    return RENAMED.get(name, name.removesuffix("Spec").removesuffix("Json"))


@pytest.mark.parametrize(("name", "typed"), _typed_dicts(), ids=lambda v: v if isinstance(v, str) else "")
def test_keys_are_nomads(name: str, typed: type) -> None:
    struct = _struct(name)
    assert struct in STRUCTS, f"{name}: no struct {struct!r} in Nomad's api package"
    keys = set(typed.__annotations__)
    assert keys - set(STRUCTS[struct]) - EXTRA.get(struct, set()) == set()


def test_every_struct_served_has_its_typed_dict() -> None:
    typed = {_struct(name) for name, _ in _typed_dicts()}
    served = {"Job", "Allocation", "Node", "Evaluation", "Deployment", "Event", "JobListStub", "NodeListStub"}
    assert served <= typed


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (constants.JOB_TYPES, ("service", "batch", "system", "sysbatch")),
        (constants.ALLOC_CLIENT_STATUSES, ("pending", "running", "complete", "failed", "lost", "unknown")),
        (constants.EVAL_STATUSES, ("pending", "blocked", "complete", "failed", "canceled")),
        (constants.NODE_STATUSES, ("initializing", "ready", "down", "disconnected")),
    ],
)
def test_the_constants_are_the_literal_aliases(values: tuple[str, ...], expected: tuple[str, ...]) -> None:
    assert values == expected


def test_terminal_statuses_are_statuses() -> None:
    assert set(constants.ALLOC_CLIENT_TERMINAL_STATUSES) < set(constants.ALLOC_CLIENT_STATUSES)
    assert set(constants.EVAL_TERMINAL_STATUSES) < set(constants.EVAL_STATUSES)
    assert set(constants.DEPLOYMENT_ACTIVE_STATUSES) < set(constants.DEPLOYMENT_STATUSES)


def test_job_status_narrows_known_statuses_and_refuses_others() -> None:
    assert [constants.job_status(s) for s in ("pending", "running", "dead")] == ["pending", "running", "dead"]
    with pytest.raises(ValueError, match="'complete' is none of pending, running, dead"):
        constants.job_status("complete")
