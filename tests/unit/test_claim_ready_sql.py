"""The claim statement with its batch size written in (no database)."""

from __future__ import annotations

import pytest

from app.pipeline.broker import MAX_CLAIM_BATCH, claim_ready_sql

pytestmark = pytest.mark.unit


def test_the_batch_size_is_a_literal_limit_not_a_parameter() -> None:
    sql = claim_ready_sql(8)
    assert "LIMIT 8" in sql and "%(batch)s" not in sql
    assert claim_ready_sql(1) != sql and "LIMIT 1\n" in claim_ready_sql(1)
    for parameter in ("%(types)s", "%(owner)s", "%(lease_s)s"):
        assert parameter in sql


@pytest.mark.parametrize("size", [0, -1, MAX_CLAIM_BATCH + 1])
def test_a_batch_size_out_of_range_is_refused(size: int) -> None:
    with pytest.raises(ValueError, match=r"outside 1\.\.64"):
        claim_ready_sql(size)
