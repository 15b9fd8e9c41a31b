"""The version and semver matchers."""

from __future__ import annotations

import pytest

from app.scheduler.feasibility.versions import compare, matches, parse

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [
        ("1.2.3", "= 1.2.3", True),
        ("1.2.3", "1.2.3", True),
        ("1.2", "= 1.2.0", True),  # missing segments are zero
        ("v1.2.3", ">= 1.0", True),
        ("1.2.3", "!= 1.2.3", False),
        ("1.2.3", "> 1.2.3", False),
        ("1.2.3", "< 1.10", True),  # numeric per segment, not lexical
        ("1.2.3", "<= 1.2.3", True),
        ("1.2.3", "=> 1.2, =< 1.3", True),
        ("1.5.0", ">= 1.2, < 2.0", True),
        ("2.0.0", ">= 1.2, < 2.0", False),
        ("1.9", "~> 1.2", True),
        ("2.0", "~> 1.2", False),
        ("1.2.9", "~> 1.2.3", True),
        ("1.3.0", "~> 1.2.3", False),
        ("1.2.2", "~> 1.2.3", False),
        ("1.2.3.4", ">= 1.2.3", True),
        # go-version's pre-release rule: only a pre-release clause of the same base matches
        ("1.3.0-beta1", ">= 1.2", False),
        ("1.3.0-beta2", ">= 1.3.0-beta1", True),
        ("1.4.0-beta2", ">= 1.3.0-beta1", False),
        ("1.3.0", ">= 1.3.0-beta1", True),
        ("1.3.0", "~> 1.3.0-beta1", False),
        ("garbage", ">= 1.0", False),
        ("1.0", "garbage >=", False),
    ],
)
def test_version(version: str, constraint: str, expected: bool) -> None:
    assert matches(version, constraint) is expected


@pytest.mark.parametrize(
    ("version", "constraint", "expected"),
    [
        ("1.2.3", ">= 1.2.0, < 2.0.0", True),
        ("1.3.0-beta.1", ">= 1.2.0", True),  # ordered by precedence rather than excluded
        ("1.3.0-beta.1", "< 1.3.0", True),
        ("1.3.0-alpha", "< 1.3.0-alpha.1", True),
        ("1.3.0-alpha.2", "< 1.3.0-alpha.10", True),  # numeric identifiers compare numerically
        ("1.3.0-1", "< 1.3.0-alpha", True),  # numeric identifiers rank below alphanumeric ones
        ("1.2.3", "~> 1.2", False),  # no pessimistic operator in semver
        ("1.2.3.4", ">= 1.0.0", False),  # at most three segments
        ("1.2.3beta", ">= 1.0.0", False),  # pre-release only after "-"
        ("1.2.3+build.5", "= 1.2.3", True),  # build metadata is ignored
    ],
)
def test_semver(version: str, constraint: str, expected: bool) -> None:
    assert matches(version, constraint, semver=True) is expected


def test_compare_orders_releases_after_prereleases() -> None:
    a, b = parse("1.0.0-rc.1"), parse("1.0.0")
    assert a is not None and b is not None
    assert compare(a, b) == -1 and compare(b, a) == 1 and compare(b, b) == 0
