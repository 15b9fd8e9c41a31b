"""The group `scaling` block: defaults, bounds, and HCL."""

from __future__ import annotations

from typing import Any

import pytest

from app.jobspec import JobSpecError, normalize_job, parse_hcl

pytestmark = pytest.mark.unit


def job(count: int, scaling: dict[str, Any]) -> dict[str, Any]:
    return {
        "ID": "w",
        "TaskGroups": [{"Name": "g", "Count": count, "Scaling": scaling, "Tasks": [{"Name": "t", "Driver": "mock"}]}],
    }


def problems(payload: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(JobSpecError) as err:
        normalize_job(payload)
    return {e.field: e.message for e in err.value.errors}


def test_min_defaults_to_the_count_and_the_rest_to_nomads_values() -> None:
    scaling = normalize_job(job(3, {"Max": 10}))["TaskGroups"][0]["Scaling"]
    assert scaling == {"Min": 3, "Max": 10, "Enabled": True, "Type": "horizontal"}


@pytest.mark.parametrize(
    ("count", "scaling", "field", "words"),
    [
        (7, {"Min": 1, "Max": 5}, "Job.TaskGroups[0].Count", "maximum 5"),
        (0, {"Min": 1, "Max": 5}, "Job.TaskGroups[0].Count", "minimum 1"),
        (1, {"Min": 1}, "Job.TaskGroups[0].Scaling.Max", "required"),
        (1, {"Min": 2, "Max": 1}, "Job.TaskGroups[0].Scaling.Max", "less than Min"),
        (1, {"Min": -1, "Max": 1}, "Job.TaskGroups[0].Scaling.Min", "negative"),
        (1, {"Max": 1, "Type": "vertical_cpu"}, "Job.TaskGroups[0].Scaling.Type", "horizontal"),
    ],
)
def test_bad_bounds_name_the_field(count: int, scaling: dict[str, Any], field: str, words: str) -> None:
    found = problems(job(count, scaling))
    assert field in found and words in found[field]


def test_hcl_scaling_block() -> None:
    parsed: Any = parse_hcl(
        'job "w" {\n group "g" {\n count = 2\n scaling {\n min = 1\n max = 4\n }\n'
        ' task "t" {\n driver = "mock"\n }\n }\n}\n'
    )
    assert parsed["TaskGroups"][0]["Scaling"] == {"Min": 1, "Max": 4}
    assert normalize_job(parsed)["TaskGroups"][0]["Scaling"]["Min"] == 1
