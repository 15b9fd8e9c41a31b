"""v_job_summary v2: allocations counted per job and group in one hashed aggregate

Every job list (`GET /v1/jobs`, the UI's jobs page, `nomad job status`) reads this view for all
jobs. Version 1 sorted every allocation by job and group to merge it with the jobs' groups: at
500 jobs and 2,500 allocations about 18 ms of Postgres per list. Version 2 counts the
allocations per (namespace, job, group) in one hash aggregate first and joins the counts; the
columns and rows are the same.

Revision ID: 0042_job_summary_hashed
Revises: 0041_usage_check_no_nested_loop
Create Date: 2026-11-30 12:10:00
"""

from collections.abc import Sequence

from alembic import op

from app.db.schema import SQL_DIR

revision: str = "0042_job_summary_hashed"
down_revision: str | None = "0041_usage_check_no_nested_loop"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute((SQL_DIR / "views" / "v_job_summary_v2.sql").read_text())


def downgrade() -> None:
    op.execute((SQL_DIR / "views" / "v_job_summary_v1.sql").read_text())
