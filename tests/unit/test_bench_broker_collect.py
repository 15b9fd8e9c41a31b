"""bench.broker's parent collects its children's counts, and does not wait forever on one that
died without reporting (real child processes; no timings)."""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable
from multiprocessing.queues import Queue

import pytest

from bench.broker import collect

pytestmark = pytest.mark.unit


def _reports(out: Queue[int], count: int) -> None:
    out.put(count)


def _dies(out: Queue[int]) -> None:
    os._exit(3)  # as a child killed mid-run: no count, no traceback


def _start(target: Callable[..., None], *args: object) -> multiprocessing.Process:
    process = multiprocessing.Process(target=target, args=args)
    process.start()
    return process


def test_every_childs_count_is_collected() -> None:
    queue: Queue[int] = multiprocessing.Queue()
    children = [_start(_reports, queue, n) for n in (5, 7)]
    assert sorted(collect(queue, children, 60)) == [5, 7]
    for child in children:
        child.join()


def test_a_child_that_died_ends_the_run_with_its_exit_code() -> None:
    queue: Queue[int] = multiprocessing.Queue()
    children = [_start(_reports, queue, 5), _start(_dies, queue)]
    with pytest.raises(RuntimeError, match=r"died \(exit codes \[3\]\)"):
        collect(queue, children, 60)
    for child in children:
        child.join()
