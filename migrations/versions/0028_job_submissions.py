"""job_submissions: the source each job version was submitted as (Nomad's JobSubmission)

One row per job version registered with a `Submission` (the HCL or JSON text, its format, the
-var flags and the variable files' contents), served by GET /v1/job/:id/submission?version=N.
The row goes with its version: pruning a version, or purging the job, cascades to it.

Revision ID: 0028_job_submissions
Revises: 0027_service_registrations
Create Date: 2026-11-29 07:40:00
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0028_job_submissions"
down_revision: str | None = "0027_service_registrations"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "job_submissions",
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the job."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="The job."),
        sa.Column("version", sa.Integer(), nullable=False, comment="The job version this source made."),
        sa.Column("source", sa.Text(), nullable=False, comment="The job file's text, as the submitter sent it."),
        sa.Column("format", sa.Text(), nullable=False, comment="Its format: hcl2 or json (as Nomad's CLI names them)."),
        sa.Column(
            "variable_flags",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="The -var name=value pairs given with it, as an object of strings.",
        ),
        sa.Column("variables", sa.Text(), nullable=False, comment="The contents of the -var-file files given with it."),
        sa.Column("job_modify_index", sa.BigInteger(), nullable=False, comment="State index of the write that stored it."),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id", "version"],
            ["job_versions.namespace", "job_versions.job_id", "job_versions.version"],
            name=op.f("fk_job_submissions_namespace_job_id_version"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("namespace", "job_id", "version", name=op.f("pk_job_submissions")),
        comment="The source a job version was submitted as (Nomad's JobSubmission: HCL or JSON text "
        "and its variables), kept while the version is; served by /v1/job/:id/submission.",
    )


def downgrade() -> None:
    op.drop_table("job_submissions")
