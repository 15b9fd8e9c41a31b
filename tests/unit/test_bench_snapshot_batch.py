"""bench.snapshot_batch's arguments (no timings)."""

from __future__ import annotations

import pytest

from bench.snapshot_batch import Cost, median, parse_args

pytestmark = pytest.mark.unit


def test_defaults_and_values() -> None:
    args = parse_args([])
    assert (args.batch, args.rounds, args.jobs, args.nodes) == (8, 1000, 800, 1000)
    assert parse_args(["--batch", "4", "--rounds", "50"]).batch == 4


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (["--batch", "0"], "argument --batch: '0' is not a positive integer"),
        (["--rounds", "x"], "argument --rounds: 'x' is not a positive integer"),
        (["--batch", "20", "--jobs", "10"], "argument --batch: 20 is more than --jobs (10)"),
    ],
)
def test_bad_arguments_are_refused_naming_them(bad: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_args(bad)
    assert says in capsys.readouterr().err


def test_the_median_of_a_field() -> None:
    costs = [Cost(3.0, 1.0, 9.0), Cost(1.0, 2.0, 8.0), Cost(2.0, 3.0, 7.0)]
    assert (median(costs, "python_ms"), median(costs, "postgres_ms"), median(costs, "wall_ms")) == (2.0, 2.0, 8.0)
