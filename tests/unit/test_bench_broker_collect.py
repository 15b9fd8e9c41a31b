"""bench.broker's parent collects its children's counts, and does not wait forever on one that
died without reporting (real child processes; no timings)."""

from __future__ import annotations

import multiprocessing
import os

import pytest

from bench.broker import collect

pytestmark = pytest.mark.unit


def _reports(out: multiprocessing.Queue, count: int) -> None:  # type: ignore[type-arg]
    out.put(count)


def _dies(out: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    os._exit(3)  # as a child killed mid-run: no count, no traceback


def _start(target: object, *args: object) -> multiprocessing.Process:
    process = multiprocessing.Process(target=target, args=args)  # type: ignore[arg-type]
    process.start()
    return process


def test_every_childs_count_is_collected() -> None:
    queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    children = [_start(_reports, queue, n) for n in (5, 7)]
    assert sorted(collect(queue, children, 60)) == [5, 7]
    for child in children:
        child.join()


def test_a_child_that_died_ends_the_run_with_its_exit_code() -> None:
    queue: multiprocessing.Queue = multiprocessing.Queue()  # type: ignore[type-arg]
    children = [_start(_reports, queue, 5), _start(_dies, queue)]
    with pytest.raises(RuntimeError, match=r"died \(exit codes \[3\]\)"):
        collect(queue, children, 60)
    for child in children:
        child.join()
