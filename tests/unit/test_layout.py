"""Architecture rules: the scheduler and its structs stay pure; SQL and views are where the docs say."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from app.store.sql import _queries

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = (
    "sqlalchemy",
    "flask",
    "psycopg",
    "app.store",
    "app.api",
    "app.models",
    "app.db",
    "gunicorn",
    "time",
    "random",
    "datetime",
)
PURE = [*sorted((ROOT / "app" / "scheduler").rglob("*.py")), ROOT / "app" / "structs.py", ROOT / "app" / "constants.py"]


def imports_of(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", PURE, ids=lambda p: str(p.relative_to(ROOT)))
def test_pure_modules_import_no_io_clock_or_randomness(path: Path) -> None:
    bad = {name for name in imports_of(path) if any(name == f or name.startswith(f + ".") for f in FORBIDDEN)}
    assert bad == set()


def test_the_purity_check_can_fail(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    probe.write_text("import random\nfrom sqlalchemy import select\n")
    assert {"random", "sqlalchemy"} <= imports_of(probe)


def test_named_queries_load_and_are_unique() -> None:
    queries = _queries()
    assert {"bump_global", "stamp_tables", "read_tables", "task_group_summaries"} <= set(queries)
    assert all(body for body in queries.values())


def test_every_view_file_is_documented() -> None:
    readme = (ROOT / "sql" / "README.md").read_text()
    for view in (ROOT / "sql" / "views").glob("*.sql"):
        assert view.stem in readme, f"{view.stem} missing from sql/README.md"
