"""workers.leases: one renewer thread keeps every held claim's lease alive, flags a claim whose
lease was taken over, and stops renewing a released one."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import Engine

from tests.support.pipeline import claim, register
from tests.support.processes import wait_for
from workers.leases import Leases

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]
LEASE_S = 1.5  # renewed every 0.5 s


def expiry(pg: Conn, job_id: str) -> object:
    row = pg.execute("SELECT lease_expires_at FROM evaluations WHERE job_id = %s", (job_id,)).fetchone()
    assert row is not None
    return row[0]


def renewed_twice(pg: Conn, job_id: str) -> None:
    for _ in range(2):
        before = expiry(pg, job_id)
        assert wait_for(lambda: expiry(pg, job_id) != before, timeout=30)  # noqa: B023


def test_held_claims_are_renewed_until_released(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    register(engine, "api")
    first, second = claim(engine, lease_s=LEASE_S), claim(engine, lease_s=LEASE_S)
    assert first is not None and second is not None
    leases = Leases(engine, LEASE_S)
    try:
        held = [leases.hold(first), leases.hold(second)]
        claimed_until = {job: expiry(pg, job) for job in ("web", "api")}
        assert wait_for(lambda: all(expiry(pg, job) != claimed_until[job] for job in claimed_until), timeout=30)
        leases.release(held[0])
        # A renewal already under way when the claim was released may still land: after two
        # renewals of the other claim (one thread, in turn) none can be.
        renewed_twice(pg, second.evaluation.job_id)
        released_at = expiry(pg, first.evaluation.job_id)
        renewed_twice(pg, second.evaluation.job_id)  # the other claim goes on being renewed ...
        assert expiry(pg, first.evaluation.job_id) == released_at  # ... the released one is not
        assert not any(lease.lost.is_set() for lease in held)
    finally:
        leases.close()


def test_a_lease_taken_over_is_flagged_lost(engine: Engine, pg: Conn) -> None:
    register(engine, "web")
    held = claim(engine, lease_s=LEASE_S)
    assert held is not None
    leases = Leases(engine, LEASE_S)
    try:
        lease = leases.hold(held)
        pg.execute("UPDATE evaluations SET lease_token = gen_random_uuid()")  # another worker's now
        assert lease.lost.wait(30)
    finally:
        leases.close()
