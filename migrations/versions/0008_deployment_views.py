"""deployments: the v_deployments view for psql

Revision ID: 0008_deployment_views
Revises: 0007_job_ops
Create Date: 2026-11-21 23:10:00
"""

from collections.abc import Sequence

from alembic import op

from app.db.schema import SQL_DIR

revision: str = "0008_deployment_views"
down_revision: str | None = "0007_job_ops"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.execute((SQL_DIR / "views" / "v_deployments_v1.sql").read_text())


def downgrade() -> None:
    op.execute("DROP VIEW v_deployments")
