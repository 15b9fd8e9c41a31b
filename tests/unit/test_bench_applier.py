"""bench.applier's modes: the three of one checkout, and another checkout's applier beside them
when BENCH_APPLIER_PEER names its `corral`."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterator
from types import ModuleType

import pytest

import bench.applier

pytestmark = pytest.mark.unit


@pytest.fixture
def reloaded(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[str | None], ModuleType]]:
    """bench.applier as imported with these settings; as the environment has it again afterwards."""

    def load(peer: str | None) -> ModuleType:
        if peer is None:
            monkeypatch.delenv("BENCH_APPLIER_PEER", raising=False)
        else:
            monkeypatch.setenv("BENCH_APPLIER_PEER", peer)
        monkeypatch.setenv("BENCH_APPLIER_BATCH", "32")
        return importlib.reload(bench.applier)

    yield load
    monkeypatch.undo()
    importlib.reload(bench.applier)


def test_each_round_runs_the_three_modes_of_this_checkout(reloaded: Callable[[str | None], ModuleType]) -> None:
    module = reloaded(None)
    assert module.MODES == {
        "pipelined": ("32", "true", module.CORRAL),
        "batched": ("32", "false", module.CORRAL),
        "one per commit": ("1", "false", module.CORRAL),
    }


def test_a_peer_checkouts_applier_runs_pipelined_in_the_same_rounds(
    reloaded: Callable[[str | None], ModuleType],
) -> None:
    module = reloaded("/elsewhere/.venv/bin/corral")
    assert module.MODES["peer pipelined"] == ("32", "true", "/elsewhere/.venv/bin/corral")
    assert module.MODES["pipelined"][2] == module.CORRAL != "/elsewhere/.venv/bin/corral"
