"""Our own job files (tests/jobspecs/): each parses, validates and places in the pure scheduler."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.cli.jobs.job_init import EXAMPLE
from app.jobspec import normalize_job, parse_hcl
from app.jobspec.warnings import job_warnings
from app.structs import Job
from app.wire.job import JobSpec
from tests.support import scheduler_harness as h

pytestmark = pytest.mark.unit

CORPUS = Path(__file__).resolve().parents[2] / "jobspecs"
FILES = sorted(CORPUS.glob("*.nomad.hcl"))
NODES = (h.node("n1"), h.node("n2"), h.node("n3", dc="dc2"))


def load(path: Path) -> JobSpec:
    var_file = path.with_name(path.name.replace(".nomad.hcl", ".vars.hcl"))
    files = [(var_file.name, var_file.read_text())] if var_file.exists() else []
    return normalize_job(parse_hcl(path.read_bytes(), filename=path.name, var_files=files, base_dir=path.parent))


def test_the_corpus_is_there() -> None:
    assert len(FILES) >= 8


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_every_file_parses_validates_and_places(path: Path) -> None:
    spec = load(path)
    job = Job.from_spec(spec)
    result = h.run(h.snapshot(job, NODES))
    placed = h.placed(result)
    if job.launches_children:
        assert placed == []
    elif job.type == "system":
        assert len(placed) == len(NODES)
    else:
        assert len(placed) == sum(g.count for g in job.task_groups), result.failed_tg_allocs
    assert not result.failed_tg_allocs


def test_example_written_by_job_init_is_valid_and_places() -> None:
    spec = normalize_job(parse_hcl(EXAMPLE, filename="example.nomad.hcl"))
    assert spec["TaskGroups"][0]["Tasks"][0]["Driver"] == "raw_exec"
    assert len(h.placed(h.run(h.snapshot(Job.from_spec(spec), NODES)))) == 1
    assert job_warnings(spec) == []


def test_service_file_carries_every_block() -> None:
    spec = load(CORPUS / "service.nomad.hcl")
    group = spec["TaskGroups"][0]
    task = group["Tasks"][0]
    assert spec["Priority"] == 60 and spec["Meta"] == {"team": "corpus"}
    assert spec["Constraints"][0] == {"LTarget": "${attr.kernel.name}", "RTarget": "linux", "Operand": "="}
    assert spec["Affinities"][0]["Weight"] == 50 and spec["Spreads"][0]["Attribute"] == "${node.datacenter}"
    assert group["Update"]["HealthCheck"] == "task_states" and group["Count"] == 2
    assert [p["Label"] for p in group["Networks"][0]["DynamicPorts"]] == ["http", "admin"]
    assert group["ReschedulePolicy"]["DelayFunction"] == "constant"
    assert group["Disconnect"]["LostAfter"] == 3600 * 10**9 and group["EphemeralDisk"]["SizeMB"] == 100
    assert group["Scaling"]["Max"] == 4 and group["Meta"] == {"tier": "front"}
    assert task["KillTimeout"] == 2 * 10**9 and task["KillSignal"] == "SIGTERM"
    assert task["Resources"] == {"CPU": 100, "MemoryMB": 64, "MemoryMaxMB": 128, "Cores": 0}
    assert task["Env"] == {"MODE": "corpus"} and task["Meta"] == {"role": "server"}


def test_lifecycle_file() -> None:
    tasks = load(CORPUS / "batch_lifecycle.nomad.hcl")["TaskGroups"][0]["Tasks"]
    hooks = {t["Name"]: t.get("Lifecycle") for t in tasks}
    assert hooks == {
        "setup": {"Hook": "prestart", "Sidecar": False},
        "proxy": {"Hook": "poststart", "Sidecar": True},
        "main": None,
        "cleanup": {"Hook": "poststop", "Sidecar": False},
    }


def test_dispatch_and_periodic_files() -> None:
    dispatch = load(CORPUS / "parameterized.nomad.hcl")
    assert dispatch["ParameterizedJob"]["MetaRequired"] == ["customer"]
    assert dispatch["TaskGroups"][0]["Tasks"][0]["DispatchPayload"] == {"File": "input.json"}
    config = load(CORPUS / "periodic.nomad.hcl")["Periodic"]
    assert config is not None and config["Specs"] == ["0 3 * * *"]


def test_variables_file_uses_var_file_locals_functions_and_file() -> None:
    spec = load(CORPUS / "variables.nomad.hcl")
    assert spec["TaskGroups"][0]["Count"] == 2
    assert spec["Meta"]["motd"] == "hello from the corpus" and spec["Meta"]["name"] == "corpus-02"
    assert spec["Meta"]["labels"] == '{"*":"*"}'
    env = spec["TaskGroups"][0]["Tasks"][0]["Env"]
    assert env == {"GREETING": "hello from the corpus (alloc ${NOMAD_ALLOC_INDEX})"}


def test_task_in_job_and_quoted_numbers_file() -> None:
    spec = load(CORPUS / "task_in_job.nomad.hcl")
    assert spec["Priority"] == 70
    [group] = spec["TaskGroups"]
    assert group["Name"] == "solo" and group["Tasks"][0]["Resources"]["CPU"] == 200
    assert group["Tasks"][0]["RestartPolicy"]["Attempts"] == 1


def test_ignored_blocks_file_warns_about_each() -> None:
    spec = load(CORPUS / "ignored_blocks.nomad.hcl")
    warnings = "\n".join(job_warnings(spec))
    for block in ("service", "vault"):
        assert f"{block} block" in warnings, block
    assert "template block" not in warnings
    assert "volume 'data' (type csi)" in warnings and "volume_mount of 'data' (a csi volume)" in warnings
    assert spec["TaskGroups"][0]["MaxClientDisconnect"] == 3600 * 10**9
