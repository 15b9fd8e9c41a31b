"""The test-database supply: each clone is fresh, the template's, and its taker's alone; a
handed-back clone is dropped, and closing drops the clone made ahead."""

from __future__ import annotations

import psycopg
import pytest

from tests.support.databases import DatabaseSupply
from tests.support.processes import wait_for

pytestmark = pytest.mark.integration


def _databases(admin_url: str) -> set[str]:
    with psycopg.connect(admin_url, autocommit=True) as conn:
        return {str(row[0]) for row in conn.execute("SELECT datname FROM pg_database")}


def _tables(admin_url: str, database: str) -> set[str]:
    with psycopg.connect(admin_url, dbname=database, autocommit=True) as conn:
        rows = conn.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")
        return {str(row[0]) for row in rows}


def test_clones_are_fresh_copies_of_the_template_and_dropped_when_handed_back(
    pg_admin_url: str, template_name: str
) -> None:
    supply = DatabaseSupply(pg_admin_url, template_name, prefix="corral_supply_")
    try:
        first = supply.take()
        with psycopg.connect(pg_admin_url, dbname=first, autocommit=True) as conn:
            conn.execute("CREATE TABLE scribble (x int)")
        second = supply.take()
        assert first != second
        assert "jobs" in _tables(pg_admin_url, second)
        assert _tables(pg_admin_url, second) == _tables(pg_admin_url, template_name)  # not the scribbled one
        with psycopg.connect(pg_admin_url, dbname=first, autocommit=True):
            supply.drop(first)  # an open connection does not keep it
            assert wait_for(lambda: first not in _databases(pg_admin_url), 60)
        supply.drop(second)
    finally:
        supply.close()
    left = {name for name in _databases(pg_admin_url) if name.startswith("corral_supply_")}
    assert left == set()  # the clone made ahead is gone too


def test_a_failed_clone_is_raised_to_the_taker(pg_admin_url: str) -> None:
    supply = DatabaseSupply(pg_admin_url, "no_such_template_db", prefix="corral_supply_")
    with pytest.raises(RuntimeError, match="making or dropping a test database failed") as raised:
        supply.take()
    assert "no_such_template_db" in str(raised.value.__cause__)
    with pytest.raises(RuntimeError):
        supply.close()
