"""Constraints, affinities and spreads, at every level they may appear."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import normalize_job
from tests.support.jobspec_builders import group, job, messages_at, task

pytestmark = pytest.mark.unit

OS = "${attr.kernel.name}"


def constraint(**fields: Any) -> dict[str, Any]:
    return {"LTarget": OS, "RTarget": "linux", **fields}


@pytest.mark.parametrize(
    "operand",
    ["=", "==", "is", "!=", "not", "<", "<=", ">", ">=", "set_contains", "set_contains_all", "set_contains_any"],
)
def test_comparison_operands_are_accepted(operand: str) -> None:
    normalize_job(job(Constraints=[constraint(Operand=operand)]))


def test_special_operands_with_their_targets_are_accepted() -> None:
    normalize_job(
        job(
            Constraints=[
                {"Operand": "distinct_hosts"},
                {"Operand": "distinct_hosts", "RTarget": "true"},
                {"Operand": "distinct_property", "LTarget": "${meta.rack}"},
                {"Operand": "distinct_property", "LTarget": "${meta.rack}", "RTarget": "2"},
                {"Operand": "is_set", "LTarget": "${meta.gpu}"},
                {"Operand": "is_not_set", "LTarget": "${meta.gpu}"},
                {"Operand": "regexp", "LTarget": OS, "RTarget": "^lin.*x$"},
                {"Operand": "version", "LTarget": "${attr.nomad.version}", "RTarget": ">= 1.6.0, < 2.0"},
                {"Operand": "semver", "LTarget": "${attr.nomad.version}", "RTarget": "~> 1.6.0-beta1"},
            ]
        )
    )


@pytest.mark.parametrize(
    ("item", "path", "message"),
    [
        (
            constraint(Operand="~="),
            "Operand",
            "must be one of =, ==, is, !=, not, <, <=, >, >=, regexp, version, "
            "semver, set_contains, set_contains_all, set_contains_any, is_set, is_not_set, distinct_hosts, "
            'distinct_property, got "~="',
        ),
        (constraint(LTarget=""), "LTarget", 'is required for operand "="'),
        (constraint(RTarget=""), "RTarget", 'is required for operand "="'),
        ({"LTarget": OS}, "RTarget", 'is required for operand "="'),
        (constraint(Operand="set_contains", RTarget=""), "RTarget", 'is required for operand "set_contains"'),
        (constraint(Operand="regexp", RTarget="(unclosed"), "RTarget", "must be a valid regular expression: "),
        (constraint(Operand="version", RTarget=""), "RTarget", 'is required for operand "version"'),
        (constraint(Operand="version", RTarget="newest"), "RTarget", "must be a version constraint"),
        (constraint(Operand="semver", RTarget=">= 1.0,, < 2"), "RTarget", "must be a version constraint"),
        ({"Operand": "distinct_property"}, "LTarget", 'is required for operand "distinct_property"'),
        (
            {"Operand": "distinct_property", "LTarget": "${meta.rack}", "RTarget": "0"},
            "RTarget",
            "must be a whole number of at least 1",
        ),
        (
            {"Operand": "distinct_property", "LTarget": "${meta.rack}", "RTarget": "x"},
            "RTarget",
            "must be a whole number of at least 1",
        ),
        ({"Operand": "is_set"}, "LTarget", 'is required for operand "is_set"'),
        ({"Operand": "is_not_set"}, "LTarget", 'is required for operand "is_not_set"'),
        ({"Operand": "is_set", "LTarget": OS, "RTarget": "x"}, "RTarget", 'must be empty for operand "is_set"'),
    ],
)
@pytest.mark.parametrize(
    ("where", "prefix"),
    [
        pytest.param(lambda c: job(Constraints=[c]), "Job.Constraints[0]", id="Job.Constraints[0]"),
        pytest.param(
            lambda c: job(TaskGroups=[group(Constraints=[constraint(), c])]),
            "Job.TaskGroups[0].Constraints[1]",
            id="Job.TaskGroups[0].Constraints[1]",
        ),
        pytest.param(
            lambda c: job(TaskGroups=[group(Tasks=[task(Constraints=[c])])]),
            "Job.TaskGroups[0].Tasks[0].Constraints[0]",
            id="Job.TaskGroups[0].Tasks[0].Constraints[0]",
        ),
    ],
)
def test_constraint_rules(item: dict[str, Any], path: str, message: str, where: Any, prefix: str) -> None:
    found = messages_at(where(item), f"{prefix}.{path}")
    assert any(text.startswith(message) for text in found), found


def test_distinct_hosts_needs_no_targets_and_operand_defaults_to_equals() -> None:
    out = normalize_job(job(Constraints=[{"Operand": "distinct_hosts"}, constraint()]))
    assert out["Constraints"][1]["Operand"] == "="


def affinity(**fields: Any) -> dict[str, Any]:
    return {"LTarget": "${node.class}", "RTarget": "large", **fields}


@pytest.mark.parametrize(
    ("item", "path", "message"),
    [
        (affinity(Weight=0), "Weight", "must not be 0"),
        (affinity(Weight=101), "Weight", "must be between -100 and 100, got 101"),
        (affinity(Weight=-101), "Weight", "must be between -100 and 100, got -101"),
        (affinity(Operand="distinct_hosts"), "Operand", "must be one of"),
        (affinity(Operand="nope"), "Operand", "must be one of"),
        (affinity(LTarget=""), "LTarget", 'is required for operand "="'),
        (affinity(RTarget=""), "RTarget", 'is required for operand "="'),
        (affinity(Operand="regexp", RTarget="[a-"), "RTarget", "must be a valid regular expression"),
    ],
)
@pytest.mark.parametrize(
    ("where", "prefix"),
    [
        pytest.param(lambda a: job(Affinities=[a]), "Job.Affinities[0]", id="Job.Affinities[0]"),
        pytest.param(
            lambda a: job(TaskGroups=[group(Affinities=[a])]),
            "Job.TaskGroups[0].Affinities[0]",
            id="Job.TaskGroups[0].Affinities[0]",
        ),
        pytest.param(
            lambda a: job(TaskGroups=[group(Tasks=[task(Affinities=[a])])]),
            "Job.TaskGroups[0].Tasks[0].Affinities[0]",
            id="Job.TaskGroups[0].Tasks[0].Affinities[0]",
        ),
    ],
)
def test_affinity_rules(item: dict[str, Any], path: str, message: str, where: Any, prefix: str) -> None:
    found = messages_at(where(item), f"{prefix}.{path}")
    assert any(text.startswith(message) for text in found), found


def test_negative_affinity_weights_are_allowed() -> None:
    out = normalize_job(job(Affinities=[affinity(Weight=-100)]))
    assert out["Affinities"][0]["Weight"] == -100


def spread(**fields: Any) -> dict[str, Any]:
    return {"Attribute": "${node.datacenter}", **fields}


@pytest.mark.parametrize(
    ("item", "path", "message"),
    [
        ({"Weight": 10}, "Attribute", "is required"),
        (spread(Weight=-1), "Weight", "must be between 0 and 100, got -1"),
        (spread(Weight=101), "Weight", "must be between 0 and 100, got 101"),
        (
            spread(SpreadTarget=[{"Value": "dc1", "Percent": 70}, {"Value": "dc2", "Percent": 40}]),
            "SpreadTarget",
            "percentages must add up to at most 100, got 110",
        ),
        (
            spread(SpreadTarget=[{"Value": "dc1", "Percent": 101}]),
            "SpreadTarget[0].Percent",
            "must be between 0 and 100",
        ),
        (spread(SpreadTarget=[{"Percent": 10}]), "SpreadTarget[0].Value", "is required"),
        (spread(SpreadTarget=[{"Value": "a"}, {"Value": "a"}]), "SpreadTarget[1].Value", 'duplicate target "a"'),
    ],
)
@pytest.mark.parametrize(
    ("where", "prefix"),
    [
        pytest.param(lambda s: job(Spreads=[s]), "Job.Spreads[0]", id="Job.Spreads[0]"),
        pytest.param(
            lambda s: job(TaskGroups=[group(Spreads=[s])]),
            "Job.TaskGroups[0].Spreads[0]",
            id="Job.TaskGroups[0].Spreads[0]",
        ),
    ],
)
def test_spread_rules(item: dict[str, Any], path: str, message: str, where: Any, prefix: str) -> None:
    found = messages_at(where(item), f"{prefix}.{path}")
    assert any(text.startswith(message) for text in found), found


def test_spread_targets_may_add_up_to_exactly_100() -> None:
    targets = [{"Value": "dc1", "Percent": 60}, {"Value": "dc2", "Percent": 40}]
    out = normalize_job(job(Spreads=[spread(Weight=0, SpreadTarget=targets)]))
    assert out["Spreads"][0]["SpreadTarget"] == targets
