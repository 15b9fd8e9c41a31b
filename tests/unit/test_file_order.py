"""The slowest test files are handed out first (tests/support/file_order.py), and xdist keeps
that order instead of its own."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.file_order import KNOWN_SECONDS, sorted_by_file

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]


def test_known_slow_files_come_first_longest_first_then_the_tiers_with_each_files_tests_in_order() -> None:
    nodeids = [
        "tests/unit/test_cron.py::test_a",
        "tests/integration/test_gc.py::test_a",
        "tests/acceptance/test_wheel.py::test_a",
        "tests/unit/test_cron.py::test_b",
        "tests/concurrency/test_claims.py::test_a",
        "tests/acceptance/test_acl.py::test_a",
        "tests/acceptance/test_chaos.py::test_a",
        "tests/integration/test_gc.py::test_b",
        "tests/ui/test_ui_pages.py::test_a",
    ]
    assert sorted_by_file(nodeids, lambda nodeid: nodeid) == [
        "tests/acceptance/test_chaos.py::test_a",  # 79 s on CI
        "tests/acceptance/test_wheel.py::test_a",  # 28 s on CI
        "tests/acceptance/test_acl.py::test_a",
        "tests/ui/test_ui_pages.py::test_a",
        "tests/concurrency/test_claims.py::test_a",
        "tests/integration/test_gc.py::test_a",
        "tests/integration/test_gc.py::test_b",
        "tests/unit/test_cron.py::test_a",
        "tests/unit/test_cron.py::test_b",
    ]


def test_every_known_slow_file_exists() -> None:
    """A renamed or deleted file would silently lose its place at the front."""
    assert [path for path in KNOWN_SECONDS if not (ROOT / path).is_file()] == []


def test_xdist_hands_files_out_in_collection_order(pytestconfig: pytest.Config) -> None:
    """With xdist's reorder (most tests first) on, the order above would be thrown away."""
    assert pytestconfig.getoption("loadscopereorder") is False
