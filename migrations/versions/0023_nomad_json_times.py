"""Stored times in Nomad's JSON form: task states and drains written before it

Clients now report a task's StartedAt, FinishedAt and LastRestart as RFC 3339 times (Go's
time.Time; the zero time for "never") and the servers store and serve them so; a node's
drain strategy is Nomad's flat DrainStrategy (Deadline and IgnoreSystemJobs beside
ForceDeadline and StartedAt, RFC 3339), and its last drain's times are RFC 3339 too. Rows
written before carry integer nanoseconds (or null) and a nested DrainSpec: they are rewritten
in place. Downgrade restores the columns' comments and leaves the data in the new form.

Revision ID: 0023_nomad_json_times
Revises: 0022_sparse_reference_indexes
Create Date: 2026-11-29 04:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0023_nomad_json_times"
down_revision: str | None = "0022_sparse_reference_indexes"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# A JSON value as Go's time.Time: numbers are Unix nanoseconds (0: never), text is kept.
TIME_FUNCTION = """
CREATE OR REPLACE FUNCTION pg_temp.go_time(value jsonb) RETURNS jsonb LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE
        WHEN jsonb_typeof(value) = 'string' THEN value
        WHEN jsonb_typeof(value) = 'number' AND (value #>> '{}')::numeric > 0 THEN to_jsonb(
            to_char(to_timestamp((value #>> '{}')::numeric / 1e9) AT TIME ZONE 'UTC',
                    'YYYY-MM-DD"T"HH24:MI:SS.US"Z"'))
        ELSE '"0001-01-01T00:00:00Z"'::jsonb
    END
$$
"""

TASK_STATES = """
UPDATE allocations SET task_states = (
    SELECT jsonb_object_agg(name, state || jsonb_build_object(
        'StartedAt', pg_temp.go_time(state -> 'StartedAt'),
        'FinishedAt', pg_temp.go_time(state -> 'FinishedAt'),
        'LastRestart', pg_temp.go_time(state -> 'LastRestart')))
    FROM jsonb_each(task_states) AS t(name, state)
    WHERE jsonb_typeof(state) = 'object')
WHERE jsonb_typeof(task_states) = 'object' AND task_states <> '{}'::jsonb
"""

DRAINS = """
UPDATE nodes SET drain_strategy = (drain_strategy - 'DrainSpec') || jsonb_build_object(
    'Deadline', coalesce(drain_strategy #> '{DrainSpec,Deadline}', drain_strategy -> 'Deadline', '0'::jsonb),
    'IgnoreSystemJobs', coalesce(drain_strategy #> '{DrainSpec,IgnoreSystemJobs}',
                                 drain_strategy -> 'IgnoreSystemJobs', 'false'::jsonb),
    'ForceDeadline', pg_temp.go_time(drain_strategy -> 'ForceDeadline'),
    'StartedAt', pg_temp.go_time(drain_strategy -> 'StartedAt'))
WHERE jsonb_typeof(drain_strategy) = 'object'
"""

LAST_DRAINS = """
UPDATE nodes SET last_drain = last_drain || jsonb_build_object(
    'StartedAt', pg_temp.go_time(last_drain -> 'StartedAt'),
    'UpdatedAt', pg_temp.go_time(last_drain -> 'UpdatedAt'),
    'AccessorID', coalesce(last_drain -> 'AccessorID', '""'::jsonb))
WHERE jsonb_typeof(last_drain) = 'object'
"""


DRAIN_COMMENT = (
    "Active drain, Nomad's DrainStrategy JSON: {Deadline (ns), IgnoreSystemJobs, ForceDeadline, StartedAt "
    "(RFC 3339)}; NULL when not draining."
)
LAST_DRAIN_COMMENT = (
    "The most recent drain, Nomad's DrainMetadata JSON: Status, StartedAt and UpdatedAt (RFC 3339), AccessorID, Meta."
)


def upgrade() -> None:
    op.execute(f"COMMENT ON COLUMN nodes.drain_strategy IS '{DRAIN_COMMENT.replace(chr(39), chr(39) * 2)}'")
    op.execute(f"COMMENT ON COLUMN nodes.last_drain IS '{LAST_DRAIN_COMMENT.replace(chr(39), chr(39) * 2)}'")
    op.execute(TIME_FUNCTION)
    op.execute(TASK_STATES)
    op.execute(DRAINS)
    op.execute(LAST_DRAINS)


def downgrade() -> None:
    old_drain = "Active drain: {DrainSpec:{Deadline,IgnoreSystemJobs},ForceDeadline,StartedAt}; NULL when not draining."
    old_last = "Metadata of the most recent drain: status, started and updated times, meta."
    op.execute(f"COMMENT ON COLUMN nodes.drain_strategy IS '{old_drain}'")
    op.execute(f"COMMENT ON COLUMN nodes.last_drain IS '{old_last}'")
