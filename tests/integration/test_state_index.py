"""next_index: the first write of every write transaction, stamping only known names."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine, text
from sqlalchemy.orm import Session

from app.db.state_index import all_indexes, next_index

pytestmark = pytest.mark.integration


def test_next_index_bumps_global_and_stamps_the_tables(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        before = all_indexes(session)
        index = next_index(session, ["jobs", "evaluations", "jobs"])
    with Session(engine) as session:
        after = all_indexes(session)
    assert index == before["_global"] + 1
    assert after["_global"] == after["jobs"] == after["evaluations"] == index
    assert after["nodes"] == before["nodes"]


def test_next_index_after_another_write_is_refused(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        session.execute(text("UPDATE state_index SET value = value WHERE name = 'nodes'"))
        with pytest.raises(RuntimeError, match="first write of the transaction"):
            next_index(session, ["jobs"])


def test_next_index_after_a_row_lock_is_refused(engine: Engine) -> None:
    """SELECT ... FOR UPDATE takes a transaction ID too: it would break the lock order."""
    with Session(engine) as session, session.begin():
        session.execute(text("SELECT * FROM scheduler_config FOR UPDATE"))
        with pytest.raises(RuntimeError, match="first write of the transaction"):
            next_index(session, ["scheduler_config"])


def test_next_index_after_reads_is_fine(engine: Engine) -> None:
    with Session(engine) as session, session.begin():
        session.execute(text("SELECT count(*) FROM jobs"))
        assert next_index(session, ["jobs"]) > 0


def test_unknown_table_name_is_refused(engine: Engine) -> None:
    with Session(engine) as session, session.begin(), pytest.raises(RuntimeError, match="not state index names"):
        next_index(session, ["jobs", "no_such_table"])
