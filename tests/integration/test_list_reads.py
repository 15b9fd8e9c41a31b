"""What the API's big lists cost in statements and what they read: an allocation list reads its
jobs' types in one statement however many allocations and jobs it shows, and a job list without
a filter reads no job's whole specification, yet answers with the same stubs as a filtered list
(which reads them, as its filter sees the whole job)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from flask.testing import FlaskClient
from sqlalchemy import Engine, event

from tests.support.api import minimal_job, node_body
from tests.support.rows import Conn, insert_allocation

pytestmark = pytest.mark.integration


@pytest.fixture
def statements() -> Iterator[list[str]]:
    """Every SQL statement any SQLAlchemy engine sends while the test runs (the app's included)."""
    sent: list[str] = []

    def record(conn: object, cursor: object, statement: str, *args: object) -> None:
        sent.append(statement)

    event.listen(Engine, "before_cursor_execute", record)
    yield sent
    event.remove(Engine, "before_cursor_execute", record)


def reads_whole_spec(statement: str) -> bool:
    """The statement reads the jobs' whole `spec` column, not only keys of it (spec -> 'Meta')."""
    return re.search(r"\b(jobs|j)\.spec\b(?!\s*->)", statement) is not None


def register(client: FlaskClient, job: dict[str, Any]) -> str:
    reply = client.put("/v1/jobs", json={"Job": job})
    assert reply.status_code == 200, reply.json
    assert reply.json is not None
    return str(reply.json["EvalID"])


def listed(client: FlaskClient, path: str, statements: list[str]) -> tuple[list[dict[str, Any]], list[str]]:
    statements.clear()
    reply = client.get(path)
    assert reply.status_code == 200, reply.json
    assert isinstance(reply.json, list)
    return reply.json, list(statements)


def test_an_allocation_list_reads_its_jobs_types_in_one_statement_however_long(
    client: FlaskClient, pg: Conn, statements: list[str]
) -> None:
    node = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node)}).status_code == 200
    kinds = {"web": "service", "nightly": "batch", "agents": "system"}

    def add(job_id: str, count: int) -> None:
        eval_id = register(client, minimal_job(job_id, Type=kinds[job_id]))
        for _ in range(count):
            insert_allocation(pg, node, eval_id, job_id=job_id, cpu=100)

    add("web", 2)
    few, few_statements = listed(client, "/v1/allocations", statements)
    add("nightly", 5)
    add("agents", 4)
    many, many_statements = listed(client, "/v1/allocations", statements)

    assert (len(few), len(many)) == (2, 11)
    assert len(many_statements) == len(few_statements), many_statements  # not one per allocation or job
    assert {(a["JobID"], a["JobType"]) for a in many} == set(kinds.items())


def test_a_job_list_without_a_filter_reads_no_specification_and_answers_as_a_filtered_one(
    client: FlaskClient, statements: list[str]
) -> None:
    register(client, minimal_job("web", Meta={"team": "payments"}))
    register(client, minimal_job("nightly", Type="batch"))
    register(client, minimal_job("agents", Type="system", Datacenters=["dc1", "dc2"], Priority=70))

    plain, plain_statements = listed(client, "/v1/jobs", statements)
    every, filtered_statements = listed(client, "/v1/jobs?filter=" + 'ID != ""', statements)
    prefixed, _ = listed(client, "/v1/jobs?prefix=ag", statements)

    assert plain == every  # the same stubs, whichever way the jobs were read
    assert [j["ID"] for j in plain] == ["agents", "nightly", "web"]
    assert plain[2]["Meta"] == {"team": "payments"} and "Meta" not in plain[1]
    assert plain[0]["Datacenters"] == ["dc1", "dc2"] and plain[0]["Multiregion"] is None
    assert [j["ID"] for j in prefixed] == ["agents"]
    assert not [s for s in plain_statements if reads_whole_spec(s)], plain_statements
    assert [s for s in filtered_statements if reads_whole_spec(s)], filtered_statements  # the check above can fail
