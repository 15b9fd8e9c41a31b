"""Revisions written after rolling upgrades arrived (0023 on) can run under a live cluster:
no index on a hot table is built inside a transaction."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.db.migration_ops import HOT_TABLES

pytestmark = pytest.mark.unit
VERSIONS = Path(__file__).resolve().parents[2] / "migrations" / "versions"
# Revisions up to this one ran before the rule; they are history and stay as written.
LAST_BEFORE_THE_RULE = 22


def _number(path: Path) -> int:
    return int(path.name.split("_", 1)[0])


def blocking_index_builds(source: str) -> list[str]:
    """`op.create_index(name, table, …)` calls on a hot table without postgresql_concurrently."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "create_index" or not (
            isinstance(node.func.value, ast.Name) and node.func.value.id == "op"
        ):
            continue
        table = (
            node.args[1]
            if len(node.args) > 1
            else next((k.value for k in node.keywords if k.arg == "table_name"), None)
        )
        concurrently = any(
            k.arg == "postgresql_concurrently" and isinstance(k.value, ast.Constant) and k.value.value is True
            for k in node.keywords
        )
        if isinstance(table, ast.Constant) and table.value in HOT_TABLES and not concurrently:
            found.append(str(table.value))
    return found


@pytest.mark.parametrize(
    "path",
    [p for p in sorted(VERSIONS.glob("[0-9]*.py")) if _number(p) > LAST_BEFORE_THE_RULE],
    ids=lambda p: p.name,
)
def test_new_revisions_build_hot_indexes_concurrently(path: Path) -> None:
    assert blocking_index_builds(path.read_text()) == [], "use app.db.migration_ops.create_index_concurrently"


def test_the_rule_can_fail() -> None:
    source = (
        "from alembic import op\n"
        "def upgrade():\n"
        "    op.create_index('ix_a', 'allocations', ['x'])\n"
        "    op.create_index('ix_b', 'evaluations', ['y'], postgresql_concurrently=True)\n"
        "    op.create_index('ix_c', 'variables', ['z'])\n"
    )
    assert blocking_index_builds(source) == ["allocations"]


def test_the_cutoff_is_history() -> None:
    assert all(_number(p) <= LAST_BEFORE_THE_RULE for p in VERSIONS.glob("00[01]*.py"))
