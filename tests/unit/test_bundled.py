"""sql/ and migrations/ are found inside the installed package first, in the checkout otherwise."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.db.bundled import CHECKOUT_ROOT, MIGRATIONS_DIR, SQL_DIR, BundledFilesMissingError, locate

pytestmark = pytest.mark.unit


def test_the_packaged_copy_wins_over_the_checkout(tmp_path: Path) -> None:
    (tmp_path / "app" / "sql").mkdir(parents=True)
    (tmp_path / "sql").mkdir()
    assert locate("sql", tmp_path / "app", tmp_path) == tmp_path / "app" / "sql"


def test_without_a_packaged_copy_the_checkout_is_used(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    (tmp_path / "migrations").mkdir()
    assert locate("migrations", tmp_path / "app", tmp_path) == tmp_path / "migrations"


def test_neither_is_an_error_naming_both_places(tmp_path: Path) -> None:
    (tmp_path / "app").mkdir()
    with pytest.raises(BundledFilesMissingError, match=r"sql/ directory is missing.*app/sql.*reinstall"):
        locate("sql", tmp_path / "app", tmp_path)


def test_a_checkout_reads_its_own_top_level() -> None:
    assert SQL_DIR == CHECKOUT_ROOT / "sql"
    assert MIGRATIONS_DIR == CHECKOUT_ROOT / "migrations"
