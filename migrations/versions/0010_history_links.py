"""allocations/evaluations: history links become soft references (no foreign key)

Nomad keeps an allocation's PreviousAllocation, NextAllocation, PreemptedByAllocation and
FollowupEvalID, and an evaluation's PreviousEval, NextEval and BlockedEval, after GC has
collected what they name: they are history, read by ID. As foreign keys with ON DELETE SET NULL
they cost GC one trigger query per deleted row and link (seven per evaluation with its
allocation: about 40% of a forced GC's server time at a million evaluations), and nulling them
rewrote live rows and changed meaning (a failed allocation whose follow-up evaluation was
collected looked as if it had none, and could get a second one).

The indexes that only served those foreign keys go too; the ones queries use stay
(previous_allocation: drain; previous/next/blocked_eval: ?related=true).

Revision ID: 0010_history_links
Revises: 0009_job_status
Create Date: 2026-11-22 01:10:00
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0010_history_links"
down_revision: str | None = "0009_job_status"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# (table, column, referenced table, index kept)
LINKS = [
    ("allocations", "previous_allocation", "allocations", True),
    ("allocations", "next_allocation", "allocations", False),
    ("allocations", "preempted_by_allocation", "allocations", False),
    ("allocations", "followup_eval_id", "evaluations", False),
    ("evaluations", "next_eval", "evaluations", True),
    ("evaluations", "previous_eval", "evaluations", True),
    ("evaluations", "blocked_eval", "evaluations", True),
]

COMMENTS = {
    ("allocations", "previous_allocation"): "Allocation this one replaces (reschedule, migration, destructive "
    "update). History: the ID stays after GC collects that allocation.",
    ("allocations", "next_allocation"): "Allocation that replaced this one. History: the ID stays after GC "
    "collects that allocation.",
    ("allocations", "preempted_by_allocation"): "Allocation whose placement evicted this one. History: the ID "
    "stays after GC collects that allocation.",
    ("allocations", "followup_eval_id"): "Delayed eval that will reschedule this allocation. History: the ID "
    "stays after GC collects that evaluation, so the allocation never gets a second follow-up.",
    ("evaluations", "next_eval"): "Eval created to follow this one (failed follow-up, rolling update). "
    "History: the ID stays after GC collects that evaluation.",
    ("evaluations", "previous_eval"): "Eval this one follows. History: the ID stays after GC collects that evaluation.",
    ("evaluations", "blocked_eval"): "Blocked eval created because this one could not place everything. "
    "History: the ID stays after GC collects that evaluation.",
}


def upgrade() -> None:
    for table, column, _, keep_index in LINKS:
        op.drop_constraint(f"fk_{table}_{column}", table, type_="foreignkey")
        if not keep_index:
            op.drop_index(f"ix_{table}_{column}", table_name=table)
    for (table, column), comment in COMMENTS.items():
        op.execute(f"COMMENT ON COLUMN {table}.{column} IS '{comment}'")


def downgrade() -> None:
    for table, column, parent, keep_index in LINKS:
        # Dangling history would fail the constraint: clear it first, as ON DELETE SET NULL did.
        op.execute(
            f"UPDATE {table} c SET {column} = NULL WHERE {column} IS NOT NULL "
            f"AND NOT EXISTS (SELECT 1 FROM {parent} p WHERE p.id = c.{column})"
        )
        if not keep_index:
            op.create_index(f"ix_{table}_{column}", table, [column])
        op.create_foreign_key(f"fk_{table}_{column}", table, parent, [column], ["id"], ondelete="SET NULL")
