"""corral on replicated PostgreSQL: every role is given one multi-host URL
(`h1:p1,h2:p2/corral?target_session_attrs=read-write`); the primary is killed with SIGKILL and
its synchronous standby promoted; the roles find the new primary and carry on, the applier and
leader are elected again under higher terms, and nothing acknowledged before the failover is lost."""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import httpx
import psycopg
import pytest

from app.db.engines import libpq_url
from app.db.schema import upgrade
from bench.replication import Replicated, replicated_postgres
from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance
# Long enough that a node's heartbeats missed during the failover do not mark it down.
SLOW_HEARTBEATS = {"CORRAL_HEARTBEAT_MIN_TTL_S": "15", "CORRAL_HEARTBEAT_GRACE_S": "15"}
RECOVERY_S = 120.0  # liveness bound only
FAILOVERS = 2


@pytest.fixture
def replicated() -> Iterator[Replicated]:
    with replicated_postgres() as cluster:
        yield cluster


def _terms(pg: psycopg.Connection[tuple[object, ...]]) -> dict[str, int]:
    return {str(role): int(str(term)) for role, term in pg.execute("SELECT role, term FROM leader_terms").fetchall()}


def _placed(cluster: Cluster, job_id: str) -> bool:
    try:
        return len(cluster.allocs(job_id)) >= 1
    except (httpx.HTTPError, ValueError):
        return False


def _registered(cluster: Cluster, job_id: str) -> bool:
    """One attempt to register a job; False while the API cannot reach a primary."""
    try:
        answer = cluster.http.put("/v1/jobs", json={"Job": job(job_id, [mock_task(run_for="1h")])})
    except httpx.HTTPError:
        return False
    return answer.status_code == 200


def test_roles_survive_repeated_primary_failovers_without_losing_acknowledged_writes(
    corral: CorralFactory, replicated: Replicated, workdir: Path
) -> None:
    upgrade(replicated.sqlalchemy_url)
    url = replicated.url  # every role keeps this one URL through both failovers
    cluster = Cluster(corral, url, workdir, SLOW_HEARTBEATS)
    cluster.client("n1")
    acknowledged: list[str] = []

    for round_ in range(FAILOVERS):
        batch = [f"before-{round_}-{n}" for n in range(3)]
        for job_id in batch:
            cluster.register(job(job_id, [mock_task(run_for="1h")]))
            acknowledged.append(job_id)
        for job_id in batch:
            assert wait_for(partial(_placed, cluster, job_id), RECOVERY_S)
        allocs_before = {a["ID"] for job_id in acknowledged for a in cluster.allocs(job_id)}
        terms_before = _terms(cluster.pg)
        assert set(terms_before) == {"applier", "leader"}

        old, [standby] = replicated.primary(), replicated.standbys()
        killed_at = time.monotonic()
        old.kill9()
        replicated.promote(standby)
        promoted_at = time.monotonic()
        cluster.pg.close()
        cluster.pg = psycopg.connect(libpq_url(url), autocommit=True)
        assert cluster.pg.execute("SELECT inet_server_port()").fetchone() == (standby.port,)

        # The API finds the new primary: a job registered now is accepted, evaluated and placed.
        after = f"after-{round_}"
        assert wait_for(partial(_registered, cluster, after), RECOVERY_S), cluster.server.output
        registered_at = time.monotonic()
        acknowledged.append(after)
        assert wait_for(partial(_placed, cluster, after), RECOVERY_S), cluster.server.output
        placed_at = time.monotonic()
        print(  # figures for the report (pytest -s), never asserted
            f"failover {round_}: promote {promoted_at - killed_at:.1f}s, API write accepted "
            f"{registered_at - promoted_at:.1f}s and plan applied {placed_at - promoted_at:.1f}s after promotion"
        )

        # The applier and the leader were elected again on the new primary, under higher terms.
        def reelected(before: dict[str, int] = terms_before) -> bool:
            terms = _terms(cluster.pg)
            return all(terms.get(role, 0) > term for role, term in before.items())

        assert wait_for(reelected, RECOVERY_S), (terms_before, _terms(cluster.pg))

        # Every write acknowledged before the failover is on the new primary.
        for job_id in acknowledged:
            assert cluster.http.get(f"/v1/job/{job_id}").status_code == 200, job_id
        rows = cluster.pg.execute("SELECT id::text FROM allocations").fetchall()
        assert allocs_before <= {str(row[0]) for row in rows}

        # Every role is connected to the new primary.
        connected = {
            str(row[0])
            for row in cluster.pg.execute(
                "SELECT DISTINCT application_name FROM pg_stat_activity WHERE datname = 'corral'"
            )
        }
        assert {"corral-api", "corral-worker", "corral-applier", "corral-leader"} <= connected, connected

        if round_ + 1 < FAILOVERS:
            # A new synchronous standby where the dead primary was, so the URL still names both.
            replicated.add_standby(f"pg{len(replicated.nodes)}", port=old.port)
    cluster.close()
