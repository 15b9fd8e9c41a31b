"""Database URLs: several hosts and target_session_attrs survive the conversion to SQLAlchemy's
form and back to libpq's, so every role (engines, LISTEN connections, Alembic) reaches the same
replicated cluster."""

from __future__ import annotations

import psycopg
import pytest
from sqlalchemy import create_engine

from app.db.engines import libpq_url, sqlalchemy_url, url_hosts

pytestmark = pytest.mark.unit

MULTI = "postgresql://corral:s%40cret@db1:5432,db2:5433/corral?target_session_attrs=read-write"


def _sqlalchemy_connect_args(url: str) -> dict[str, object]:
    engine = create_engine(sqlalchemy_url(url))
    try:
        args = dict(engine.dialect.create_connect_args(engine.url)[1])
    finally:
        engine.dispose()
    args.pop("context", None)
    return args


def test_sqlalchemy_engine_gets_every_host_and_the_session_attrs() -> None:
    args = _sqlalchemy_connect_args(MULTI)
    assert args["host"] == "db1,db2"
    assert args["port"] == "5432,5433"
    assert args["target_session_attrs"] == "read-write"
    assert args["password"] == "s@cret"
    assert args["dbname"] == "corral"


def test_libpq_url_gives_psycopg_every_host_and_the_session_attrs() -> None:
    conninfo = psycopg.conninfo.conninfo_to_dict(libpq_url(sqlalchemy_url(MULTI)))
    assert conninfo["host"] == "db1,db2"
    assert conninfo["port"] == "5432,5433"
    assert conninfo["target_session_attrs"] == "read-write"
    assert conninfo["password"] == "s@cret"


@pytest.mark.parametrize(
    "url",
    [
        MULTI,
        "postgresql://db1,db2/corral",
        "postgresql+psycopg://u@/corral?host=db1:1&host=db2:2&sslmode=require",
        "postgresql://postgres@/postgres?host=/tmp/sock&port=5",
        "postgresql://u:p@db:5/corral",
    ],
)
def test_conversions_round_trip(url: str) -> None:
    assert libpq_url(sqlalchemy_url(libpq_url(url))) == libpq_url(url)
    assert sqlalchemy_url(libpq_url(url)) == sqlalchemy_url(url)


def test_single_host_urls_are_unchanged() -> None:
    assert sqlalchemy_url("postgresql://u:p@db:5/corral") == "postgresql+psycopg://u:p@db:5/corral"
    assert libpq_url("postgresql+psycopg://u:p@db:5/corral") == "postgresql://u:p@db:5/corral"


def test_url_hosts_lists_hosts_in_order() -> None:
    assert url_hosts(MULTI) == ["db1:5432", "db2:5433"]
    assert url_hosts("postgresql://u@db:5/corral") == ["db:5"]


def test_hosts_named_twice_are_refused() -> None:
    with pytest.raises(ValueError, match="both"):
        sqlalchemy_url("postgresql://db1,db2/corral?host=db3")
