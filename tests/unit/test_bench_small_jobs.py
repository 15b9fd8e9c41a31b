"""bench.small_jobs's arguments, and the ceiling's statements taken from sql/queries (no timings)."""

from __future__ import annotations

import re

import pytest

from app.jobspec import normalize_job
from app.pipeline.snapshot import GENERIC_PLANS
from bench.small_jobs import AFFINITY, Run, parse_args
from bench.small_jobs_ceiling import PER_JOB, for_job, named, script

pytestmark = pytest.mark.unit


def test_worker_counts_default_to_1_2_4_and_are_sorted_once_each() -> None:
    assert parse_args([]).workers == (1, 2, 4)
    args = parse_args(["--workers", "4,1,2,2", "--jobs", "300", "--repeat", "3"])
    assert (args.workers, args.jobs, args.nodes, args.repeat) == ((1, 2, 4), 300, 1000, 3)
    assert args.peer_batch is None and args.affinity is False
    assert parse_args(["--peer-batch", "1"]).peer_batch == 1
    assert parse_args(["--affinity"]).affinity is True


def test_the_affinity_is_one_every_bench_node_meets() -> None:
    group = {"Name": "g", "Count": 3, "Affinities": [AFFINITY], "Tasks": [{"Name": "t", "Driver": "mock"}]}
    spec = normalize_job({"ID": "a", "Datacenters": ["dc1"], "TaskGroups": [group]})
    (affinity,) = spec["TaskGroups"][0]["Affinities"]
    assert (affinity["LTarget"], affinity["Operand"], affinity["RTarget"]) == ("${node.datacenter}", "=", "dc1")


@pytest.mark.parametrize(
    "bad", [["--workers", "0"], ["--workers", "two"], ["--workers", ""], ["--jobs", "-5"], ["--peer-batch", "0"]]
)
def test_bad_counts_are_refused_naming_the_argument(bad: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(bad)
    assert f"error: argument {bad[0]}: {bad[1]!r} is not" in capsys.readouterr().err


def test_statements_come_from_sql_queries_with_their_parameters_renamed() -> None:
    text = named("take_index", tables="apply_tables", notify="apply_notify")
    assert "CAST(:apply_tables AS text[])" in text and ":tables" not in text
    assert "CAST(:apply_notify AS boolean)" in text and not text.endswith(";")
    # A cast is not a parameter: '::boolean' survives the renaming.
    assert "::boolean" in named("snapshot_jobs_allocations", job_ids="x")


class _Columns:
    """Stands in for the connection the script reads column lists from."""

    def execute(self, query: str, params: tuple[str], /) -> list[tuple[str]]:
        return [("id",), ("job_id",)]


def test_the_ceiling_script_names_only_statements_that_exist_in_sql_queries() -> None:
    # A renamed or removed query (the group-commit applier renamed next_plan) must fail here,
    # not when someone next runs the benchmark.
    text = script(_Columns(), 10, 1)
    for statement in ("next_plans", "evals_still_owned", "complete_evals", "snapshot_usage"):
        assert named(statement).splitlines()[0] in text


def test_a_batch_script_gives_each_job_its_own_variables() -> None:
    text = script(_Columns(), 10, 3)
    for name in PER_JOB:  # every per-job variable is one job's: none left bare, none past the batch
        assert not re.search(rf":{name}\b", text), name
        assert f":{name}3" in text and f":{name}4" not in text
    # The claim takes the batch at once and sets each claimed row's variables.
    assert "LIMIT 3" in text and "ids[3] AS id3" in text and "lease_tokens[3] AS lease_token3" in text
    # The cluster and the jobs are read once, the preemptible work per job; each plan is
    # submitted and its ID set.
    assert text.count(named("snapshot_usage")) == 1
    assert text.count(named("snapshot_jobs_allocations")) == 1
    assert text.count(for_job(named("snapshot_preemptible").replace(":max_priority", "NULL"), 2)) == 1
    assert [f"plan_id{i} \\gset" in text for i in (1, 2, 3)] == [True] * 3
    # One apply transaction for the batch, one applier at a time.
    assert text.count("pg_advisory_xact_lock") == 1 and text.count(named("complete_evals", plans="plan_ids")) == 1


def test_per_job_renaming_leaves_longer_names_alone() -> None:
    assert for_job("WHERE id = :id AND x = ANY(:ids) AND j = :job_id", 2) == (
        "WHERE id = :id2 AND x = ANY(:ids) AND j = :job_id2"
    )


def _run(workers: int, cpu: dict[str, float], evaluations: int = 1000) -> Run:
    return Run(workers, evaluations, evaluations * 3, 1.0, cpu, "", None)


def test_the_cpu_bound_is_the_cores_or_the_workers_python_whichever_is_lower() -> None:
    # 2.5 ms of CPU per evaluation over all roles: two cores do 800/s; one worker's 1 ms, 1,000/s.
    busy = _run(1, {"workers": 1.0, "applier": 0.5, "postgres": 1.0})
    assert busy.cpu_bound(2) == pytest.approx((800.0, "cores"))
    # A worker whose Python is most of the work binds first: 1 / 2 ms = 500/s, two of them 1,000/s.
    heavy = _run(1, {"workers": 2.0, "applier": 0.2, "postgres": 0.3})
    assert heavy.cpu_bound(2)[1] == "GIL" and heavy.cpu_bound(2)[0] == pytest.approx(500.0)
    assert _run(2, heavy.cpu).cpu_bound(4) == pytest.approx((1000.0, "GIL"))


def test_a_batch_of_one_reads_its_job_by_key_as_the_worker_does() -> None:
    text = script(_Columns(), 10, 1)
    assert for_job(named("snapshot_job_allocations"), 1) in text
    assert "CAST(:namespaces AS text[])" not in text and GENERIC_PLANS not in text
    batched = script(_Columns(), 10, 2)
    assert named("snapshot_jobs_allocations") in batched and batched.count(GENERIC_PLANS) == 1
