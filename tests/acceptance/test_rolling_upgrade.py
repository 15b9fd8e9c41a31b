"""A rolling upgrade as docs/operations.md describes it: the new release's roles (server,
worker, applier, leader and a client) start on a database one revision behind, jobs keep
being registered and placed, and `corral db upgrade` migrates the schema under them. Nothing
fails: every job is placed and running, no role exits, and no evaluation is lost or failed."""

from __future__ import annotations

import threading
from pathlib import Path

import httpx
import pytest

from app.db.schema import head_revision, previous_revision, upgrade
from tests.support.cluster import Cluster, job, mock_task
from tests.support.processes import CorralFactory, wait_for

pytestmark = pytest.mark.acceptance
JOBS = 24


def _register_jobs(base: str, names: list[str], errors: list[str], halfway: threading.Event) -> None:
    with httpx.Client(base_url=base, timeout=30) as http:
        for number, name in enumerate(names):
            answer = http.put("/v1/jobs", json={"Job": job(name, [mock_task()], count=2)})
            if answer.status_code != 200:
                errors.append(f"{name}: {answer.status_code} {answer.text}")
            if number == len(names) // 3:
                halfway.set()


def test_schema_upgrade_under_running_roles_loses_and_fails_nothing(
    corral: CorralFactory, empty_database_url: str, workdir: Path
) -> None:
    previous = previous_revision()
    assert previous is not None
    upgrade(empty_database_url, previous)
    cluster = Cluster(corral, empty_database_url, workdir)
    try:
        client = cluster.client("c1", "--driver", "mock")
        names = [f"web-{n:02d}" for n in range(JOBS)]
        errors: list[str] = []
        halfway = threading.Event()
        writer = threading.Thread(target=_register_jobs, args=(cluster.base, names, errors, halfway))
        writer.start()
        assert halfway.wait(120)
        migrate = corral(["db", "upgrade", "--lock-timeout", "1s"], env={"CORRAL_DATABASE_URL": empty_database_url})
        assert migrate.wait(180) == 0, migrate.output
        writer.join(180)
        assert errors == []

        def all_running() -> bool:
            statuses = [a["ClientStatus"] for name in names for a in cluster.allocs(name)]
            return statuses.count("running") == 2 * JOBS

        assert wait_for(all_running, 120)
        cluster.settle()
        version = cluster.pg.execute("SELECT version_num FROM alembic_version").fetchone()
        assert version == (head_revision(),)
        failed = cluster.pg.execute("SELECT count(*) FROM evaluations WHERE status = 'failed'").fetchone()
        assert failed == (0,)
        for role in [*cluster.roles, client]:
            assert role.process.poll() is None, role.output
    finally:
        cluster.close()
