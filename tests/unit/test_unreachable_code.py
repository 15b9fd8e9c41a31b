"""No statement follows a return, raise, continue or break in the same block: such code never
runs, and is how a merge once left a client attribute's initialisation after a method's return."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
ENDS = (ast.Return, ast.Raise, ast.Continue, ast.Break)


def unreachable(source: str) -> list[int]:
    """Line numbers of the first statement after each block-ending statement."""
    found = []
    for node in ast.walk(ast.parse(source)):
        for field in ("body", "orelse", "finalbody", "handlers"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                found += [body[i + 1].lineno for i, stmt in enumerate(body[:-1]) if isinstance(stmt, ENDS)]
    return found


@pytest.mark.parametrize("room", ["app", "client", "workers"])
def test_no_code_after_a_return(room: str) -> None:
    bad = [
        f"{p.relative_to(ROOT)}:{line}"
        for p in sorted((ROOT / room).rglob("*.py"))
        for line in unreachable(p.read_text())
    ]
    assert bad == []


def test_the_check_can_fail() -> None:
    assert unreachable("def f():\n    return 1\n    x = 2\n") == [3]
