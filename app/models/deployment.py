"""Deployments: the progress of a rolling update or canary rollout of a job version."""

from __future__ import annotations

import uuid
from datetime import datetime

from sqlalchemy import CheckConstraint, ForeignKeyConstraint, Index, Integer, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base, create_index_column, modify_index_column
from app.values.constants import DEPLOYMENT_ACTIVE_STATUSES, DEPLOYMENT_STATUSES, sql_in
from app.wire.plan import DeploymentGroupJson


class Deployment(Base):
    __tablename__ = "deployments"
    __table_args__ = (
        ForeignKeyConstraint(["namespace", "job_id"], ["jobs.namespace", "jobs.id"], ondelete="CASCADE"),
        CheckConstraint(f"status IN {sql_in(DEPLOYMENT_STATUSES)}", name="status"),
        Index("ix_deployments_namespace_job_id", "namespace", "job_id", "create_index"),
        Index(
            "ix_deployments_active",
            "namespace",
            "job_id",
            postgresql_where=text(f"status IN {sql_in(DEPLOYMENT_ACTIVE_STATUSES)}"),
        ),
        {"comment": "Deployments: rolling updates and canaries of one job version."},
    )

    id: Mapped[uuid.UUID] = mapped_column(primary_key=True, comment="Deployment ID.")
    namespace: Mapped[str] = mapped_column(comment="Namespace of the job.")
    job_id: Mapped[str] = mapped_column(comment="Job being deployed.")
    job_version: Mapped[int] = mapped_column(Integer, comment="Job version being rolled out.")
    job_modify_index: Mapped[int] = mapped_column(comment="Job modify index of that version.")
    job_spec_modify_index: Mapped[int] = mapped_column(comment="Job spec modify index of that version.")
    job_create_index: Mapped[int] = mapped_column(comment="Create index of the job (detects re-creation).")
    is_multiregion: Mapped[bool] = mapped_column(server_default=text("false"), comment="Multiregion rollout.")
    status: Mapped[str] = mapped_column(comment="running, paused, failed, successful, cancelled, ...")
    status_description: Mapped[str] = mapped_column(
        server_default=text("''"), comment="Why the deployment has its status."
    )
    task_groups: Mapped[dict[str, DeploymentGroupJson]] = mapped_column(
        JSONB,
        server_default=text("'{}'::jsonb"),
        comment="Group -> DeploymentState {DesiredTotal, PlacedAllocs, HealthyAllocs, Promoted, ...}.",
    )
    eval_priority: Mapped[int] = mapped_column(Integer, comment="Priority of evals the deployment creates.")
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    create_time: Mapped[datetime] = mapped_column(server_default=text("now()"), comment="When created.")
    modify_time: Mapped[datetime] = mapped_column(
        server_default=text("now()"), comment="Last change; deployment GC measures from here."
    )
