"""The table of evaluation triggers in docs/scheduling.md stays true: it lists all seventeen triggers of
Nomad's evaluation list, and each names a test that exists and asserts that trigger."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from app.values.constants import EVAL_TRIGGERS

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
# Nomad's list in seed 002; alloc-reschedule (the first window of delayed reschedules) is
# Nomad's own variant of alloc-failure and is not on it.
SEED_TRIGGERS = tuple(t for t in EVAL_TRIGGERS if t != "alloc-reschedule")
ROW = re.compile(r"^\| `([a-z-]+)` \| [^|]+ \| `(tests/[^`:]+)::(test_\w+)` \|$")


def table() -> dict[str, tuple[str, str]]:
    rows = {}
    for line in (ROOT / "docs" / "scheduling.md").read_text().splitlines():
        match = ROW.match(line)
        if match:
            rows[match.group(1)] = (match.group(2), match.group(3))
    return rows


def test_every_seed_trigger_has_a_row() -> None:
    assert len(SEED_TRIGGERS) == 17
    assert sorted(table()) == sorted(SEED_TRIGGERS)


def test_each_row_names_a_test_that_asserts_its_trigger() -> None:
    for trigger, (path, name) in table().items():
        source = (ROOT / path).read_text()
        functions = {
            node.name: ast.get_source_segment(source, node) or ""
            for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.FunctionDef)
        }
        assert name in functions, f"{trigger}: {path}::{name} does not exist"
        assert re.search(rf"['\"]{re.escape(trigger)}['\"]", functions[name]), f"{trigger}: {name} never names it"
