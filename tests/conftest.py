"""Test databases: one PostgreSQL per xdist worker (embedded, or CORRAL_TEST_DATABASE_URL),
a template migrated once with `alembic upgrade head`, and a fresh clone per test."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from psycopg import sql
from sqlalchemy import Engine
from sqlalchemy.engine import make_url

from app.db.embedded import EmbeddedPostgres, server_settings
from app.db.engines import libpq_url, make_engine, sqlalchemy_url
from app.db.schema import upgrade
from bench.replication import shared_tmp_dir
from tests.support.processes import CORRAL, Corral, CorralFactory

pytest_plugins = ["tests.support.tiers", "tests.support.file_order", "tests.support.fast_app"]


# The session's server holds nothing that must survive a crash of the machine (its data directory
# is deleted at the end): no commit, CREATE DATABASE or checkpoint waits for the disk. Tests that
# crash a server on purpose start one of their own with the product's settings.
THROWAWAY_SERVER = {"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"}


def pytest_configure(config: pytest.Config) -> None:
    """A suite started in the background by a shell without job control (`pytest &` in a
    script) inherits SIGINT ignored, and so does every process it starts: `corral monitor` and
    other commands the tests stop with Ctrl-C's signal would never stop. The default back here
    (in the controller and in every xdist worker) is what the children inherit."""
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def pg_admin_url() -> Iterator[str]:
    """libpq URL of a server the tests may create and drop databases on."""
    external = os.environ.get("CORRAL_TEST_DATABASE_URL")
    if external:
        yield libpq_url(external)
        return
    with shared_tmp_dir("corral-test-pg-") as data_dir:
        server = EmbeddedPostgres(data_dir, {**server_settings(), **THROWAWAY_SERVER})
        url = server.start()
        try:
            yield libpq_url(url)
        finally:
            server.stop()


@pytest.fixture
def workdir() -> Iterator[Path]:
    """Working directory for processes that may start their own embedded server."""
    with shared_tmp_dir("corral-test-work-") as path:
        yield path


def _with_database(admin_url: str, name: str) -> str:
    return sqlalchemy_url(make_url(admin_url).set(database=name).render_as_string(hide_password=False))


@pytest.fixture(scope="session")
def template_name(pg_admin_url: str, worker_id: str) -> Iterator[str]:
    name = f"corral_template_{worker_id}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    upgrade(_with_database(pg_admin_url, name))
    yield name
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


def _clone(pg_admin_url: str, template: str) -> str:
    """A fresh clone of the template, made now: a clone made in the background, during another
    test, would hold the server's oldest running transaction back and with it every safe index
    the test reads (app.db.state_index caps indexes cluster-wide)."""
    name = f"corral_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(template)))
    return name


def _drop(pg_admin_url: str, name: str) -> None:
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def database_url(pg_admin_url: str, template_name: str) -> Iterator[str]:
    """A database of its own for one test, cloned from the migrated template."""
    name = _clone(pg_admin_url, template_name)
    yield _with_database(pg_admin_url, name)
    _drop(pg_admin_url, name)


@pytest.fixture
def empty_database_url(pg_admin_url: str) -> Iterator[str]:
    """A database with no schema at all, for migration tests."""
    name = f"corral_empty_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    yield _with_database(pg_admin_url, name)
    with psycopg.connect(pg_admin_url, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def engine(database_url: str) -> Iterator[Engine]:
    eng = make_engine(database_url, "test")
    yield eng
    eng.dispose()


@pytest.fixture
def pg(database_url: str) -> Iterator[psycopg.Connection[tuple[object, ...]]]:
    """A plain autocommit psycopg connection, as an operator in psql would have."""
    with psycopg.connect(libpq_url(database_url), autocommit=True) as conn:
        yield conn


PROJECT_ROOT = Path(__file__).resolve().parents[1]


def tracked_corral(workdir: Path, started: list[Corral]) -> CorralFactory:
    """A `corral` factory starting its processes in WORKDIR and listing them in STARTED."""

    class Tracked(Corral):
        def __init__(
            self,
            args: list[str],
            env: dict[str, str] | None = None,
            cwd: Path | None = None,
            executable: str = CORRAL,
        ) -> None:
            # Only what the test passes: a CORRAL_* variable of the caller must not leak in.
            inherited = {k: v for k, v in os.environ.items() if not k.startswith("CORRAL_")}
            merged = {**inherited, "CORRAL_LOG_FORMAT": "console", **(env or {})}
            super().__init__(args, cwd or workdir, merged, executable)
            started.append(self)

    return Tracked


@pytest.fixture
def corral(workdir: Path) -> Iterator[CorralFactory]:
    started: list[Corral] = []
    yield tracked_corral(workdir, started)
    for proc in started:
        proc.kill_all()


@pytest.fixture(scope="module")
def module_workdir() -> Iterator[Path]:
    """`workdir` kept for a whole module, for the processes one module shares."""
    with shared_tmp_dir("corral-test-module-") as path:
        yield path


@pytest.fixture(scope="module")
def module_corral(module_workdir: Path) -> Iterator[CorralFactory]:
    """`corral` kept for a whole module: its processes serve every test of the module that asks
    for them and are killed at the module's end."""
    started: list[Corral] = []
    yield tracked_corral(module_workdir, started)
    for proc in started:
        proc.kill_all()


@pytest.fixture(scope="module")
def module_database_url(pg_admin_url: str, template_name: str) -> Iterator[str]:
    """`database_url` kept for a whole module."""
    name = _clone(pg_admin_url, template_name)
    yield _with_database(pg_admin_url, name)
    _drop(pg_admin_url, name)
