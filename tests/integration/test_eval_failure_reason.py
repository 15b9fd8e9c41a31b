"""A scheduling pass that keeps raising fails its evaluation with the error in StatusDescription."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import Engine

from app.db.engines import make_sessionmaker, transaction
from app.pipeline import broker
from app.pipeline.broker import DELIVERY_LIMIT
from tests.support.pipeline import claim, register

pytestmark = pytest.mark.integration

Conn = psycopg.Connection[tuple[object, ...]]


def test_last_delivery_error_is_kept_in_status_description(engine: Engine, pg: Conn) -> None:
    first = register(engine, "web")
    pg.execute("UPDATE evaluations SET delivery_count = %s", (DELIVERY_LIMIT - 2,))
    for expect_final in (False, True):
        pg.execute("UPDATE evaluations SET not_before = now() WHERE id = %s", (first,))
        held = claim(engine)
        assert held is not None
        with transaction(make_sessionmaker(engine)) as session:
            final = broker.nack(session, held, "ValueError: invalid literal for int() with base 10: '1h'")
        assert final is expect_final
    row = pg.execute("SELECT status, status_description FROM evaluations WHERE id = %s", (first,)).fetchone()
    assert row is not None and row[0] == "failed"
    assert "delivery limit (3)" in str(row[1]) and "ValueError: invalid literal" in str(row[1])
