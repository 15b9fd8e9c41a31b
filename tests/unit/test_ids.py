"""New IDs are random (version 4) so that the 8 characters the CLI prints tell them apart."""

from __future__ import annotations

import pytest

from app.values.ids import new_id

pytestmark = pytest.mark.unit


def test_ids_made_in_a_burst_differ_in_their_printed_prefix() -> None:
    ids = [new_id() for _ in range(200)]
    assert all(i.version == 4 for i in ids)
    # Time-ordered IDs made within the same millisecond share their first 8 characters; random
    # ones collide there with a probability of about 200^2 / 2^33 (5e-6).
    assert len({str(i)[:8] for i in ids}) == len(ids)
