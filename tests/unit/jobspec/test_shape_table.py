"""The job's shape is written once, in app/wire/job.py's TypedDicts and their marks: the Nomad
keys and zero values (app.jobspec.shapes) are derived from it; the job file's names
(app.jobspec.hcl_schema), the pydantic model (app.jobspec.model) and the warnings' block names
(app.jobspec.warnings) are checked against it here, so a block added to one and not the other fails."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from app.jobspec import model, warnings
from app.jobspec.hcl_schema import OPAQUE, SCHEMAS
from app.jobspec.shapes import (
    CANONICAL,
    HCL_BLOCKS,
    INPUT_NESTED,
    INPUT_ONLY,
    SHAPES,
    Nested,
    accepted_keys,
    fields,
    hcl_name,
)
from app.wire.marks import OmitEmpty
from tests.support import nomad_fields

pytestmark = pytest.mark.unit

# Names a job file takes that are no key of the block's struct, and why.
HCL_ONLY: dict[str, frozenset[str]] = {
    # A task written directly in the job becomes a group of its own (hcl.py); Nomad's job file
    # takes vault and consul blocks at job level, which the API's Job does not carry.
    "job": frozenset({"task", "vault", "consul"}),
    "group": frozenset({"vault"}),
    # The operator shorthands Nomad's parser turns into Operand and RTarget.
    "constraint": frozenset(
        {
            "distinct_hosts",
            "distinct_property",
            "regexp",
            "version",
            "semver",
            "set_contains",
            "set_contains_any",
            "set_contains_all",
        }
    ),
    "affinity": frozenset({"regexp", "version", "semver", "set_contains", "set_contains_any", "set_contains_all"}),
}

# The pydantic model's class for each struct it validates.
MODELS: dict[str, type[BaseModel]] = {
    "Job": model.Job,
    "TaskGroup": model.TaskGroup,
    "Task": model.Task,
    "Constraint": model.Constraint,
    "Affinity": model.Affinity,
    "Spread": model.Spread,
    "SpreadTarget": model.SpreadTarget,
    "Port": model.Port,
    "NetworkResource": model.Network,
    "Resources": model.Resources,
    "EphemeralDisk": model.EphemeralDisk,
    "UpdateStrategy": model.UpdateStrategy,
    "MigrateStrategy": model.MigrateStrategy,
    "RestartPolicy": model.RestartPolicy,
    "ReschedulePolicy": model.ReschedulePolicy,
    "PeriodicConfig": model.PeriodicConfig,
    "ParameterizedJobConfig": model.ParameterizedJobConfig,
    "DisconnectStrategy": model.DisconnectStrategy,
    "ScalingPolicy": model.ScalingPolicy,
    "TaskLifecycleConfig": model.TaskLifecycle,
    "DispatchPayloadConfig": model.DispatchPayloadConfig,
    "ChangeScript": model.ChangeScript,
    "WaitConfig": model.WaitConfig,
    "Template": model.Template,
    "LogConfig": model.LogConfig,
}


def _hcl_names(shape: str) -> dict[str, str]:
    """The job file's name -> the struct's key (keys no job file spells left out)."""
    names = {}
    for key in fields(shape):
        name = hcl_name(shape, key)
        if name is not None:
            names[name] = key
    return names


@pytest.mark.parametrize("block", sorted(HCL_BLOCKS))
def test_every_name_of_a_job_file_block_is_a_key_of_its_struct(block: str) -> None:
    schema = SCHEMAS[block]
    spelt = set(schema.attributes) | set(schema.blocks)
    unknown = spelt - set(_hcl_names(HCL_BLOCKS[block])) - HCL_ONLY.get(block, frozenset())
    assert unknown == set(), f"hcl_schema {block!r} takes {sorted(unknown)}: add the keys to app/wire/job.py"


@pytest.mark.parametrize("block", sorted(HCL_BLOCKS))
def test_every_key_of_a_struct_is_spelt_in_its_job_file_block(block: str) -> None:
    schema = SCHEMAS[block]
    spelt = set(schema.attributes) | set(schema.blocks)
    missing = {name: key for name, key in _hcl_names(HCL_BLOCKS[block]).items() if name not in spelt}
    assert missing == {}, f"add {sorted(missing)} to hcl_schema {block!r}, or mark the keys NotInHcl()"


def test_every_struct_with_a_block_is_in_the_table() -> None:
    assert set(HCL_BLOCKS.values()) <= set(CANONICAL)
    assert set(SHAPES) == set(CANONICAL)


@pytest.mark.parametrize("shape", sorted(MODELS))
def test_the_model_declares_only_keys_of_the_struct(shape: str) -> None:
    declared = {field.alias or name for name, field in MODELS[shape].model_fields.items()}
    assert declared - accepted_keys(shape) == set()


def test_the_warnings_name_blocks_as_the_job_file_does() -> None:
    levels = {
        "Job": warnings._JOB,
        "TaskGroup": {**warnings._GROUP, **warnings._GROUP_ATTRIBUTES},
        "Task": {**warnings._TASK, **warnings._TASK_ATTRIBUTES},
        "Resources": warnings._RESOURCES,
    }
    for shape, names in levels.items():
        for key, name in names.items():
            if key in fields(shape):
                assert hcl_name(shape, key) == name, (shape, key)


def test_the_opaque_blocks_are_kept_as_written() -> None:
    # A block kept as written is no struct the canonical form walks into.
    for block in OPAQUE:
        assert block not in HCL_BLOCKS or block in {"config", "meta", "env"}


def test_zero_values_follow_go_and_the_marks() -> None:
    assert SHAPES["Job"]["Priority"] == 0 and SHAPES["Job"]["Meta"] is None
    assert SHAPES["Job"]["Update"] == Nested("UpdateStrategy", filled=True)
    assert SHAPES["TaskGroup"]["Update"] == Nested("UpdateStrategy")
    assert SHAPES["Task"]["Templates"] == Nested("Template", many=True)
    assert SHAPES["EphemeralDisk"]["SizeMB"] == 300
    assert SHAPES["DisconnectStrategy"]["Replace"] is True
    assert isinstance(SHAPES["NetworkResource"]["Hostname"], OmitEmpty)
    assert SHAPES["Task"]["ScalingPolicies"] is None  # kept as sent
    assert INPUT_ONLY["Job"] == {"Reschedule", "Migrate", "VaultToken", "ConsulToken"}
    assert INPUT_NESTED["Job"] == {"Migrate": Nested("MigrateStrategy"), "Reschedule": Nested("ReschedulePolicy")}


@pytest.mark.parametrize(
    ("shape", "oracle"),
    [
        ("Job", nomad_fields.JOB),
        ("TaskGroup", nomad_fields.TASK_GROUP),
        ("Task", nomad_fields.TASK),
        ("Resources", nomad_fields.RESOURCES),
        ("NetworkResource", nomad_fields.NETWORK_RESOURCE),
        ("PeriodicConfig", nomad_fields.PERIODIC_CONFIG),
        ("DisconnectStrategy", nomad_fields.DISCONNECT_STRATEGY),
    ],
)
def test_the_keys_are_nomads_in_nomads_order(shape: str, oracle: list[str]) -> None:
    assert [k for k in SHAPES[shape] if not isinstance(SHAPES[shape][k], OmitEmpty)] == [
        k for k in oracle if not isinstance(SHAPES[shape].get(k), OmitEmpty)
    ]
