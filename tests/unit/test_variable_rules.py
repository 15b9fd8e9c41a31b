"""Nomad's rules for variables: paths, item sizes, locks, and the Go duration strings locks are
shown with."""

from __future__ import annotations

import pytest

from app.variables.rules import (
    DEFAULT_LOCK_DELAY_NS,
    DEFAULT_LOCK_TTL_NS,
    LockSpec,
    VariableRuleError,
    check_items,
    check_path,
    go_duration,
    items_size,
)

pytestmark = pytest.mark.unit
S = 1_000_000_000


@pytest.mark.parametrize(
    "path", ["a", "nomad/jobs", "nomad/jobs/web/g/t", "nomad/job-templates/x", "A-b_c~d/e", "x" * 128]
)
def test_valid_paths(path: str) -> None:
    check_path(path)


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("", "requires path"),
        ("a b", "invalid path"),
        ("a.b", "invalid path"),
        ("x" * 129, "invalid path"),
        ("nomad", "reserved top-level"),
        ("nomad/job-templates", "reserved directory"),
        ("nomad/job-templates/a/b", "reserved directory"),
        ("nomad/secrets", "only paths at"),
    ],
)
def test_invalid_paths(path: str, message: str) -> None:
    with pytest.raises(VariableRuleError, match=message):
        check_path(path)


def test_items_are_limited_to_64_kib_of_keys_and_values_in_bytes() -> None:
    assert items_size({"ab": "cdé"}) == 6
    check_items({"k": "x" * (65536 - 1)})
    with pytest.raises(VariableRuleError, match="64KiB"):
        check_items({"k": "x" * 65536})
    with pytest.raises(VariableRuleError, match="empty"):
        check_items({})


def test_a_lock_gets_an_id_and_nomads_defaults_then_its_ttl_is_bounded() -> None:
    lock = LockSpec().canonical("id-1")
    assert lock == LockSpec("id-1", DEFAULT_LOCK_TTL_NS, DEFAULT_LOCK_DELAY_NS)
    assert LockSpec("mine", 20 * S).canonical("other").id == "mine"
    lock.check()
    for ttl in (9 * S, 24 * 3600 * S + 1):
        with pytest.raises(VariableRuleError, match="between 10 seconds and 24 hours"):
            LockSpec("x", ttl, S).check()
    with pytest.raises(VariableRuleError, match="positive"):
        LockSpec("x", 20 * S, -1).check()


@pytest.mark.parametrize(
    ("nanos", "text"),
    [
        (0, "0s"),
        (15 * S, "15s"),
        (60 * S, "1m0s"),
        (3600 * S, "1h0m0s"),
        (1500 * 10**6, "1.5s"),
        (500 * 10**6, "500ms"),
    ],
)
def test_go_durations(nanos: int, text: str) -> None:
    assert go_duration(nanos) == text
