"""bench.small_jobs's arguments, and the ceiling's statements taken from sql/queries (no timings)."""

from __future__ import annotations

import pytest

from bench.small_jobs import parse_args
from bench.small_jobs_ceiling import named, script

pytestmark = pytest.mark.unit


def test_worker_counts_default_to_1_2_4_and_are_sorted_once_each() -> None:
    assert parse_args([]).workers == (1, 2, 4)
    args = parse_args(["--workers", "4,1,2,2", "--jobs", "300", "--repeat", "3"])
    assert (args.workers, args.jobs, args.nodes, args.repeat) == ((1, 2, 4), 300, 1000, 3)
    assert args.peer_batch is None
    assert parse_args(["--peer-batch", "1"]).peer_batch == 1


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
    assert "::boolean" in named("snapshot_job_allocations", job_id="x")


class _Columns:
    """Stands in for the connection the script reads column lists from."""

    def execute(self, sql: str, params: object = None) -> list[tuple[str]]:
        return [("id",), ("job_id",)]


def test_the_ceiling_script_names_only_statements_that_exist_in_sql_queries() -> None:
    # A renamed or removed query (the group-commit applier renamed next_plan) must fail here,
    # not when someone next runs the benchmark.
    text = script(_Columns(), 10)  # type: ignore[arg-type]
    for statement in ("next_plans", "evals_still_owned", "complete_evals", "snapshot_usage"):
        assert named(statement).splitlines()[0] in text
