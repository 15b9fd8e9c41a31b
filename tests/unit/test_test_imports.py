"""Test modules share helpers only through tests/support/: importing from another test module
runs (and couples to) that module's tests, and an import from a conftest bypasses pytest's own
conftest loading."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, source: str) -> set[str]:
    """Every module `source` (the text of `path`) imports, relative imports resolved against its package."""
    package = module_name(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join([*base, *(node.module.split(".") if node.module else [])])
            found.add(module)
            # `from tests.integration import test_x` names a module too.
            found.update(f"{module}.{alias.name}" for alias in node.names)
    return found


def forbidden_imports(path: Path, source: str) -> list[str]:
    own = module_name(path)
    return sorted(
        name
        for name in imported_modules(path, source)
        if (name == "tests" or name.startswith("tests."))
        and not name.startswith("tests.support")
        and name != own
        and _is_module(name)
    )


def _is_module(name: str) -> bool:
    """Only module files count: a package's __init__ holds no tests, and `from tests.support import x`
    also yields `tests.support.x`, which may be a name rather than a module."""
    return (ROOT / Path(*name.split("."))).with_suffix(".py").exists()


def test_modules_under_tests_import_helpers_only_from_tests_support() -> None:
    bad = {
        str(path.relative_to(ROOT)): names
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != "__init__.py" and (names := forbidden_imports(path, path.read_text()))
    }
    assert bad == {}


def test_the_import_check_can_fail() -> None:
    probe = TESTS / "unit" / "test_probe_not_collected.py"
    source = (
        "from tests.integration.test_broker import claim\n"
        "from tests.integration import conftest\n"
        "from .test_layout import imports_of\n"
        "from tests.support.rows import insert_node\n"
    )
    assert forbidden_imports(probe, source) == [
        "tests.integration.conftest",
        "tests.integration.test_broker",
        "tests.unit.test_layout",
    ]
