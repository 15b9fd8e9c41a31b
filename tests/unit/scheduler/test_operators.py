"""Every constraint operand and target, table-driven."""

from __future__ import annotations

import pytest

from app.scheduler.feasibility import operators
from app.scheduler.feasibility.feasible import satisfies
from app.scheduler.feasibility.targets import escapes_class, resolve
from app.structs import Constraint
from tests.support.scheduler_harness import node

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(
    ("operand", "left", "right", "expected"),
    [
        ("=", "linux", "linux", True),
        ("==", "linux", "linux", True),
        ("is", "linux", "windows", False),
        ("=", None, "linux", False),
        ("!=", "linux", "windows", True),
        ("not", "linux", "linux", False),
        ("!=", None, "linux", True),  # a missing attribute differs from anything
        ("<", "2", "10", True),  # numeric when both are numbers
        ("<", "b", "a", False),  # lexical otherwise
        ("<", "10", "9a", True),  # "10" < "9a" lexically
        ("<=", "3.5", "3.5", True),
        (">", "10", "9", True),
        (">=", "1e3", "999", True),
        (">", None, "1", False),
        ("regexp", "linux-5.15", r"^linux-\d+", True),
        ("regexp", "darwin", "lin", False),
        ("regexp", "x", "(", False),  # an invalid pattern never matches
        ("version", "1.2.3", ">= 1.2, < 2.0", True),
        ("version", "2.0.0", ">= 1.2, < 2.0", False),
        ("semver", "1.2.3", ">= 1.2.0", True),
        ("set_contains", "a,b,c", "a,c", True),
        ("set_contains", "a, b", "b,d", False),
        ("set_contains_all", "a,b,c", "c, b", True),
        ("set_contains_any", "a,b", "x, b", True),
        ("set_contains_any", "a,b", "x,y", False),
        ("is_set", "anything", None, True),
        ("is_set", None, None, False),
        ("is_not_set", None, None, True),
        ("is_not_set", "x", None, False),
        ("distinct_hosts", None, None, True),  # enforced elsewhere
        ("distinct_property", "x", None, True),
        ("bogus", "a", "a", False),
    ],
)
def test_operands(operand: str, left: str | None, right: str | None, expected: bool) -> None:
    assert operators.check(operand, left, right) is expected


N = node("alpha", dc="eu-1", node_class="large", pool="gpu", attrs={"cpu.arch": "amd64"}, meta={"rack": "r1"})


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("${node.unique.id}", str(N.id)),
        ("${node.unique.name}", "alpha"),
        ("${node.datacenter}", "eu-1"),
        ("${node.class}", "large"),
        ("${node.pool}", "gpu"),
        ("${attr.cpu.arch}", "amd64"),
        ("${attr.unique.hostname}", "alpha"),
        ("${meta.rack}", "r1"),
        ("${meta.missing}", None),
        ("${node.nonsense}", None),
        ("literal", "literal"),
        ("", ""),
    ],
)
def test_targets(target: str, expected: str | None) -> None:
    assert resolve(target, N) == expected


@pytest.mark.parametrize(
    ("target", "escapes"),
    [
        ("${node.unique.id}", True),
        ("${attr.unique.hostname}", True),
        ("${meta.unique.x}", True),
        ("${attr.kernel.name}", False),
        ("${node.datacenter}", False),
    ],
)
def test_unique_targets_escape_the_class(target: str, escapes: bool) -> None:
    assert escapes_class(target) is escapes


@pytest.mark.parametrize(
    ("constraint", "expected"),
    [
        (Constraint("${attr.kernel.name}", "=", "linux"), True),
        (Constraint("${meta.rack}", "set_contains_any", "r1,r2"), True),
        (Constraint("${node.datacenter}", "regexp", "^us-"), False),
        (Constraint("${attr.nope}", "is_not_set", ""), True),
        (Constraint("linux", "=", "${attr.kernel.name}"), True),  # targets work on both sides
    ],
)
def test_constraint_against_node(constraint: Constraint, expected: bool) -> None:
    assert satisfies(constraint, N) is expected
