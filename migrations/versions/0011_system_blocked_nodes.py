"""evaluations.blocked_nodes, node_unblocks: system blocked evals wait on their nodes only

A system (or sysbatch) job places one allocation per node, so capacity freed on another node
can never place what a full node could not. Nomad tracks such blocked evals per node and
releases them only from UnblockNode(nodeID). Releasing them on any capacity in their class
made a rolling system update ignore its `stagger`: the pass's own stop on one node freed the
job's blocked eval (waiting on a full node) and the next node was updated at once.

`blocked_nodes` lists the nodes a system blocked eval waits on (NULL for every other eval,
which class capacity keeps releasing as before); `node_unblocks` remembers the state index of
each node's latest capacity change, for the missed-unblock check at block time, as
`class_unblocks` does per class. Rows go with their node (ON DELETE CASCADE).

Revision ID: 0011_system_blocked_nodes
Revises: 0010_history_links
Create Date: 2026-11-23 23:00:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011_system_blocked_nodes"
down_revision: str | None = "0010_history_links"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column(
        "evaluations",
        sa.Column(
            "blocked_nodes",
            sa.ARRAY(sa.UUID()),
            nullable=True,
            comment="System and sysbatch blocked evals: the nodes too full to place on. Only capacity on one of "
            "them releases the eval (Nomad's UnblockNode); NULL for every other eval, which capacity in a class "
            "it can use releases.",
        ),
    )
    # Existing blocked evals keep NULL: they stay class-released until their job's next pass.
    op.create_index(
        "ix_evaluations_blocked_nodes",
        "evaluations",
        ["blocked_nodes"],
        postgresql_using="gin",
        postgresql_where=sa.text("status = 'blocked' AND blocked_nodes IS NOT NULL"),
    )
    op.create_table(
        "node_unblocks",
        sa.Column("node_id", sa.UUID(), nullable=False, comment="The node."),
        sa.Column(
            "unblock_index", sa.BigInteger(), nullable=False, comment="State index of the latest capacity change."
        ),
        sa.ForeignKeyConstraint(
            ["node_id"], ["nodes.id"], name=op.f("fk_node_unblocks_node_id"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_node_unblocks")),
        comment="Last state index at which capacity appeared on each node; a system blocked eval whose snapshot "
        "predates it for a node it waits on was unblocked meanwhile (missed-unblock check).",
    )


def downgrade() -> None:
    op.drop_table("node_unblocks")
    op.drop_index("ix_evaluations_blocked_nodes", table_name="evaluations")
    op.drop_column("evaluations", "blocked_nodes")
