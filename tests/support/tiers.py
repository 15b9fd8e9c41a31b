"""A pytest plugin: every test carries exactly one tier mark, or the run fails and names it.

Markers are strict, but a test with no mark at all would still slip through `-m unit` (deselected
with nobody told), so the check runs before `-m` deselects and reports as a failing test of its
own: a test rather than a collection error, because it reads the same under xdist and no `-m`
expression can deselect it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

TIERS = ("unit", "integration", "concurrency", "acceptance", "browser")


def tier_problems(items: list[pytest.Item]) -> list[str]:
    """One line per test that does not carry exactly one tier mark."""
    problems = []
    for item in items:
        tiers = sorted({mark.name for mark in item.iter_markers() if mark.name in TIERS})
        if len(tiers) != 1:
            problems.append(f"{item.nodeid}: {', '.join(tiers) or 'no tier'}")
    return problems


class TierMarksCheck(pytest.Item):
    """Fails, listing the tests without exactly one tier mark."""

    def __init__(self, *, problems: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.problems = problems

    def runtest(self) -> None:
        pytest.fail(
            f"every test needs exactly one tier mark ({', '.join(TIERS)}), e.g. "
            "`pytestmark = pytest.mark.unit`; these do not:\n  " + "\n  ".join(self.problems),
            pytrace=False,
        )

    def reportinfo(self) -> tuple[Path, int, str]:
        return Path(__file__), 0, "tier marks"


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(session: pytest.Session, items: list[pytest.Item]) -> Iterator[None]:
    problems = tier_problems(items)  # before `-m` deselects them
    yield
    if problems:
        items.append(
            TierMarksCheck.from_parent(
                session, name="tier-marks", nodeid="tests/support/tiers.py::tier-marks", problems=problems
            )
        )
