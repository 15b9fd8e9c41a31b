"""The state index without a global lock: a write's index is its transaction ID

Before, every write transaction bumped one '_global' row as its first write and held that row
lock through its commit, so all writers of the cluster committed one at a time (the ceiling of
the small-jobs benchmark). Now a write's index is its own transaction ID (xid8, assigned at its
first write, never reused, increasing) plus a fixed offset, and state_index becomes an
append-only log of (table name, index) that writers only INSERT into: unrelated writers never
wait for each other. Readers take the "safe index", the snapshot's xmin minus one: every
transaction with a lower xid has finished, so no change with an index at or below it can still
appear (docs/architecture.md, "The state index").

The offset keeps indexes increasing across the upgrade: the first xid-based index exceeds every
index the counter handed out (a restored dump may have xids far below its stored indexes).

Revision ID: 0015_state_index
Revises: 0014_events
Create Date: 2026-11-26 11:00:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0015_state_index"
down_revision: str | None = "0014_events"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TABLE_COMMENT = (
    "Append-only log of the state index: one row per table a write transaction changed, at that "
    "transaction's index (its xid plus state_index_offset()). Readers take max(value) per name at "
    "or below state_index_safe(); the leader deletes all but the newest row per name below it."
)
OLD_TABLE_COMMENT = (
    "Commit-ordered state index. Writers bump '_global' (a row lock, so indexes become visible in "
    "order) and stamp it on the tables they touch."
)


def upgrade() -> None:
    offset = op.get_bind().exec_driver_sql(
        "SELECT greatest(0, (SELECT max(value) FROM state_index) + 1 - pg_current_xact_id()::text::bigint)"
    )
    _create_functions(int(offset.scalar_one()))
    op.execute("ALTER TABLE state_index DROP CONSTRAINT pk_state_index")
    op.create_primary_key("pk_state_index", "state_index", ["name", "value"])
    # Appended to, never updated: no room for HOT updates is needed.
    op.execute("ALTER TABLE state_index SET (fillfactor = 100)")
    _comment_table(TABLE_COMMENT)
    op.execute("COMMENT ON COLUMN state_index.name IS 'A table name (or the pre-0015 ''_global'' floor).'")
    op.execute("COMMENT ON COLUMN state_index.value IS 'The index of a write transaction that changed that table.'")


def _comment_table(comment: str) -> None:
    quoted = comment.replace("'", "''")
    op.execute(f"COMMENT ON TABLE state_index IS '{quoted}'")


def _create_functions(offset: int) -> None:
    op.execute(
        f"""CREATE FUNCTION state_index_offset() RETURNS bigint LANGUAGE sql IMMUTABLE PARALLEL SAFE
        AS 'SELECT CAST({offset} AS bigint)'"""
    )
    op.execute("COMMENT ON FUNCTION state_index_offset() IS 'Added to every xid so indexes never went back at 0015.'")
    # The calling transaction's own index: assigns its xid if it has none yet.
    op.execute(
        """CREATE FUNCTION state_index_own() RETURNS bigint LANGUAGE sql VOLATILE
        AS 'SELECT CAST(CAST(pg_current_xact_id() AS text) AS bigint) + state_index_offset()'"""
    )
    # The highest index whose transaction, and every lower one, has finished as of the current
    # snapshot: the transaction's snapshot under REPEATABLE READ, the statement's otherwise.
    op.execute(
        """CREATE FUNCTION state_index_safe() RETURNS bigint LANGUAGE sql STABLE
        AS 'SELECT CAST(CAST(pg_snapshot_xmin(pg_current_snapshot()) AS text) AS bigint)
                   + state_index_offset() - 1'"""
    )


def downgrade() -> None:
    # Back to one row per name, holding the newest index (the old counter continues from there).
    op.execute("DELETE FROM state_index s USING state_index newer WHERE newer.name = s.name AND newer.value > s.value")
    op.execute(
        "INSERT INTO state_index (name, value) SELECT '_global', max(value) FROM state_index "
        "ON CONFLICT (name, value) DO NOTHING"
    )
    op.execute(
        "DELETE FROM state_index s USING state_index newer "
        "WHERE s.name = '_global' AND newer.name = '_global' AND newer.value > s.value"
    )
    op.execute("ALTER TABLE state_index DROP CONSTRAINT pk_state_index")
    op.create_primary_key("pk_state_index", "state_index", ["name"])
    op.execute("ALTER TABLE state_index SET (fillfactor = 50)")
    _comment_table(OLD_TABLE_COMMENT)
    op.execute("COMMENT ON COLUMN state_index.name IS '''_global'' or a table name.'")
    op.execute("COMMENT ON COLUMN state_index.value IS 'Latest index written to that table.'")
    for function in ("state_index_safe", "state_index_own", "state_index_offset"):
        op.execute(f"DROP FUNCTION {function}()")
