"""What PostgreSQL's catalog says about a set of tables, for comparing two databases.

Alembic's autogenerate compare skips CHECK constraints and is lenient about defaults and
partial indexes, so a model and a migration can disagree without `alembic check` noticing. Here
both sides are real databases (one migrated, one built by `create_all` from the models) and each
is described by Postgres itself (pg_get_constraintdef, pg_get_indexdef, pg_get_expr), which
normalizes the text the same way on both sides."""

from __future__ import annotations

from dataclasses import dataclass, field

import psycopg

Conn = psycopg.Connection[tuple[object, ...]]


@dataclass(frozen=True)
class Column:
    type: str
    not_null: bool
    default: str | None
    identity: str
    comment: str | None


@dataclass(frozen=True)
class Table:
    comment: str | None
    persistence: str
    columns: dict[str, Column] = field(default_factory=dict)
    constraints: dict[str, str] = field(default_factory=dict)
    indexes: dict[str, str] = field(default_factory=dict)


def describe(conn: Conn, tables: list[str]) -> dict[str, Table]:
    found: dict[str, Table] = {}
    for name in tables:
        row = conn.execute(
            "SELECT obj_description(c.oid, 'pg_class'), c.relpersistence::text FROM pg_class c "
            "WHERE c.oid = to_regclass(%s)",
            (f"public.{name}",),
        ).fetchone()
        if row is None:
            continue
        comment, persistence = row
        found[name] = Table(
            comment=str(comment) if comment is not None else None,
            persistence=str(persistence),
            columns=_columns(conn, name),
            constraints=_pairs(
                conn,
                "SELECT conname, pg_get_constraintdef(oid) FROM pg_constraint WHERE conrelid = to_regclass(%s)",
                name,
            ),
            indexes=_pairs(
                conn,
                "SELECT i.indexrelid::regclass::text, pg_get_indexdef(i.indexrelid) FROM pg_index i "
                "WHERE i.indrelid = to_regclass(%s)",
                name,
            ),
        )
    return found


def _columns(conn: Conn, table: str) -> dict[str, Column]:
    rows = conn.execute(
        """
        SELECT a.attname, format_type(a.atttypid, a.atttypmod), a.attnotnull,
               pg_get_expr(d.adbin, d.adrelid), a.attidentity::text, col_description(a.attrelid, a.attnum)
        FROM pg_attribute a
        LEFT JOIN pg_attrdef d ON d.adrelid = a.attrelid AND d.adnum = a.attnum
        WHERE a.attrelid = to_regclass(%s) AND a.attnum > 0 AND NOT a.attisdropped
        """,
        (f"public.{table}",),
    ).fetchall()
    return {
        str(name): Column(
            type=str(type_),
            not_null=bool(not_null),
            default=str(default) if default is not None else None,
            identity=str(identity),
            comment=str(comment) if comment is not None else None,
        )
        for name, type_, not_null, default, identity, comment in rows
    }


def _pairs(conn: Conn, query: str, table: str) -> dict[str, str]:
    return {str(k): str(v) for k, v in conn.execute(query, (f"public.{table}",)).fetchall()}


def differences(expected: dict[str, Table], actual: dict[str, Table]) -> list[str]:
    """One readable line per difference, `expected` being the models' side."""
    lines: list[str] = []
    for name in sorted(expected.keys() | actual.keys()):
        want, got = expected.get(name), actual.get(name)
        if want is None or got is None:
            lines.append(f"{name}: only in the {'migrated database' if want is None else 'models'}")
            continue
        # Storage parameters (fillfactor, autovacuum) are deliberately left out: the migrations own
        # them and the models do not declare them; test_hot_tables_carry_autovacuum_and_fillfactor
        # checks them on the migrated side.
        for attr in ("comment", "persistence"):
            if getattr(want, attr) != getattr(got, attr):
                lines.append(f"{name} {attr}: models {getattr(want, attr)!r}, migrated {getattr(got, attr)!r}")
        for kind in ("columns", "constraints", "indexes"):
            ours, theirs = getattr(want, kind), getattr(got, kind)
            for key in sorted(ours.keys() | theirs.keys()):
                if ours.get(key) != theirs.get(key):
                    lines.append(f"{name} {kind} {key}: models {ours.get(key)!r}, migrated {theirs.get(key)!r}")
    return lines
