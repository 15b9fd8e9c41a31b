"""Hand-written SQL from sql/queries, loaded by name (`-- name: <name>` headers)."""

from __future__ import annotations

import re
from functools import cache

from sqlalchemy import TextClause, text

from app.db.bundled import SQL_DIR

_HEADER = re.compile(r"^-- name: (\S+)\s*$", re.MULTILINE)


@cache
def _queries() -> dict[str, str]:
    found: dict[str, str] = {}
    for path in sorted((SQL_DIR / "queries").glob("*.sql")):
        parts = _HEADER.split(path.read_text())
        for name, body in zip(parts[1::2], parts[2::2], strict=True):
            if name in found:
                raise ValueError(f"query {name!r} is defined twice (in {path.name})")
            found[name] = body.strip()
    return found


@cache
def query(name: str) -> TextClause:
    """The named statement as a SQLAlchemy text clause, made once: text() parses the statement
    for its bind parameters each time, a cost every heartbeat paid (the clause is immutable:
    bindparams() and columns() return new ones)."""
    try:
        return text(_queries()[name])
    except KeyError:
        raise KeyError(f"no SQL query named {name!r} in {SQL_DIR / 'queries'}") from None


@cache
def psycopg_query(name: str) -> str:
    """The named statement in psycopg's %(name)s style, for the few hot paths that drive a raw
    psycopg connection (pipeline mode) instead of SQLAlchemy."""
    from sqlalchemy.dialects import postgresql

    return str(query(name).compile(dialect=postgresql.psycopg.dialect()))  # type: ignore[no-untyped-call]
