"""Where a task's workload identities go on the client: NOMAD_TOKEN and secrets/nomad_token for
the default identity, NOMAD_TOKEN_<name> and secrets/nomad_<name>.jwt for a named one, each
only as its block asks; which tasks need identities signed at all."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from client.allocs.task_plans import task_plans
from client.tasks.identities import requests, task_env, task_files
from client.tasks.taskenv import NodeInfo

pytestmark = pytest.mark.unit
TASK = {
    "Name": "t",
    "Driver": "mock",
    "Identity": {"Env": True, "File": False},
    "Identities": [{"Name": "vault_x", "File": True}],
}
TOKENS = {"default": "jwt-default", "vault_x": "jwt-vault"}


def alloc(*tasks: dict[str, Any]) -> dict[str, Any]:
    return {
        "ID": "a1",
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "Job": {"ID": "j", "TaskGroups": [{"Name": "g", "Tasks": list(tasks)}]},
    }


def test_identities_go_where_their_blocks_ask() -> None:
    assert task_env(TASK, TOKENS) == {"NOMAD_TOKEN": "jwt-default"}
    assert task_files(TASK, TOKENS) == {"nomad_vault_x.jwt": "jwt-vault"}
    assert task_env({"Name": "t"}, TOKENS) == {} and task_files({"Name": "t"}, TOKENS) == {}


def test_only_tasks_with_an_identity_or_template_block_ask_for_identities() -> None:
    plain = {"Name": "p", "Driver": "mock"}
    templated = {"Name": "q", "Driver": "mock", "Templates": [{"DestPath": "local/x"}]}
    assert requests(alloc(plain)) == []
    assert requests(alloc(plain, TASK, templated)) == [
        {"AllocID": "a1", "TaskName": "t", "IdentityName": "default"},
        {"AllocID": "a1", "TaskName": "t", "IdentityName": "vault_x"},
        {"AllocID": "a1", "TaskName": "q", "IdentityName": "default"},
    ]


def test_the_task_environment_carries_nomad_token(tmp_path: Path) -> None:
    plans, _ = task_plans(alloc(TASK), NodeInfo.of({"Name": "n1"}), tmp_path, {"t": TOKENS})
    assert plans[0].spec.env["NOMAD_TOKEN"] == "jwt-default"
    assert "NOMAD_TOKEN_vault_x" not in plans[0].spec.env
    plans, _ = task_plans(
        alloc({**TASK, "Env": {"NOMAD_TOKEN": "mine"}}), NodeInfo.of({"Name": "n1"}), tmp_path, {"t": TOKENS}
    )
    assert plans[0].spec.env["NOMAD_TOKEN"] == "mine"  # the task's own env block wins, as for every variable
