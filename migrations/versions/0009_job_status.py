"""jobs: status derived from allocations and evaluations (corral_job_status_v1)

Revision ID: 0009_job_status
Revises: 0008_deployment_views
Create Date: 2026-11-21 23:20:00
"""

from collections.abc import Sequence

from alembic import op

from app.db.schema import SQL_DIR

revision: str = "0009_job_status"
down_revision: str | None = "0008_deployment_views"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute((SQL_DIR / "functions" / "job_status_v1.sql").read_text())
    op.execute(
        "COMMENT ON COLUMN jobs.status IS 'Status as the last write of the job set it (pending on register, "
        "dead on stop); the API answers with corral_job_status_v1(jobs), derived from allocations and evaluations.'"
    )


def downgrade() -> None:
    op.execute("DROP FUNCTION corral_job_status_v1(jobs)")
