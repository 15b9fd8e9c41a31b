"""While PostgreSQL is down or restarting the API answers 503 with Retry-After and a body that
says the database is unavailable, never 500; a write whose COMMIT lost its connection says its
outcome is unknown (issue 23). The outage runs on a Postgres of this test's own."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from flask.testing import FlaskClient

from app import create_app
from app.db.engines import libpq_url
from app.settings.config import Settings
from tests.support.own_postgres import OwnPostgres, own_postgres
from tests.support.processes import wait_for

pytestmark = pytest.mark.concurrency
JOB = {"Job": {"ID": "web", "TaskGroups": [{"Name": "g", "Tasks": [{"Name": "t", "Driver": "mock"}]}]}}


def api(url: str) -> Iterator[FlaskClient]:
    app = create_app(Settings(database_url=url, max_blocking_wait_s=5, http_db_pool_timeout_s=2), url)
    try:
        yield app.test_client()
    finally:
        app.extensions["corral"].close()


@pytest.fixture
def postgres(workdir: Path) -> Iterator[OwnPostgres]:
    with own_postgres(workdir) as pg:
        yield pg


@pytest.fixture
def outage_client(postgres: OwnPostgres) -> Iterator[FlaskClient]:
    yield from api(postgres.url)


@pytest.fixture
def client(database_url: str) -> Iterator[FlaskClient]:
    yield from api(database_url)


def test_the_api_answers_503_with_retry_after_while_the_database_is_down(
    outage_client: FlaskClient, postgres: OwnPostgres
) -> None:
    assert outage_client.get("/v1/jobs").status_code == 200
    postgres.stop()
    node = uuid.uuid4()
    requests = [
        ("GET", "/v1/jobs", None),
        ("GET", "/v1/job/web", None),
        ("PUT", "/v1/jobs", JOB),
        ("PUT", f"/v1/node/{node}/heartbeat", {"Status": "ready"}),
        ("GET", "/v1/evaluations", None),
    ]
    for method, path, body in requests:
        answer = outage_client.open(path, method=method, json=body, headers={"X-Nomad-Token": "secret"})
        assert answer.status_code == 503, (path, answer.status_code, answer.get_data(as_text=True))
        assert int(answer.headers["Retry-After"]) >= 1
        assert "database is unavailable" in answer.get_json()["detail"], path

    postgres.start()
    # The pool replaces its dead connections; the API is back without a restart.
    assert wait_for(lambda: outage_client.get("/v1/jobs").status_code == 200, 60)
    assert outage_client.put("/v1/jobs", json=JOB).status_code == 200


def test_the_api_answers_503_when_its_sessions_are_terminated(client: FlaskClient, database_url: str) -> None:
    assert client.get("/v1/jobs").status_code == 200
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        pg.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
    answers = [client.get("/v1/jobs").status_code for _ in range(3)]
    assert set(answers) <= {200, 503}, answers  # never a 500


def test_a_write_whose_commit_lost_its_connection_says_its_outcome_is_unknown(
    client: FlaskClient, database_url: str
) -> None:
    # A deferred constraint trigger runs at COMMIT: it ends its own session right there.
    with psycopg.connect(libpq_url(database_url), autocommit=True) as pg:
        pg.execute(
            "CREATE FUNCTION cut_at_commit() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN PERFORM pg_terminate_backend(pg_backend_pid()); RETURN NULL; END $$"
        )
        pg.execute(
            "CREATE CONSTRAINT TRIGGER cut_at_commit AFTER INSERT ON jobs DEFERRABLE INITIALLY DEFERRED "
            "FOR EACH ROW EXECUTE FUNCTION cut_at_commit()"
        )
    answer = client.put("/v1/jobs", json=JOB)
    assert answer.status_code == 503, answer.get_data(as_text=True)
    assert "may or may not have been applied" in answer.get_json()["detail"]
    assert answer.headers["Retry-After"]
