"""Jobs (desired state), their version history and periodic launch bookkeeping."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import (
    CheckConstraint,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    Text,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import (
    Base,
    create_index_column,
    created_at_column,
    modify_index_column,
    updated_at_column,
)
from app.values.constants import JOB_STATUSES, JOB_TYPES, sql_in
from app.wire.job import JobSpec, JobType, JobVersionTagSpec


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(f"type IN {sql_in(JOB_TYPES)}", name="type"),
        CheckConstraint(f"status IN {sql_in(JOB_STATUSES)}", name="status"),
        CheckConstraint("priority BETWEEN 1 AND 100", name="priority"),
        CheckConstraint("version >= 0", name="version"),
        Index("ix_jobs_parent", "namespace", "parent_id"),
        Index("ix_jobs_gc", "status_updated_at", postgresql_where=text("status = 'dead'")),
        # Job GC's candidates, walked in key order once per run (sql/queries/gc.sql).
        Index(
            "ix_jobs_gc_candidates",
            "namespace",
            "id",
            postgresql_where=text("stop OR purged_at IS NOT NULL OR type IN ('batch', 'sysbatch')"),
        ),
        # The periodic parents the leader reads every second (app/store/job/periodic.py).
        Index(
            "ix_jobs_periodic", "namespace", "id", postgresql_where=text("periodic AND NOT stop AND purged_at IS NULL")
        ),
        # A parent outlives its children: job GC cannot delete it under a child being registered.
        ForeignKeyConstraint(["namespace", "parent_id"], ["jobs.namespace", "jobs.id"]),
        {"comment": "Jobs: the desired state users submit. spec holds the current Nomad job JSON."},
    )

    namespace: Mapped[str] = mapped_column(
        ForeignKey("namespaces.name", ondelete="RESTRICT"),
        primary_key=True,
        comment="Namespace the job lives in.",
    )
    id: Mapped[str] = mapped_column(primary_key=True, comment="Job ID, unique per namespace.")
    name: Mapped[str] = mapped_column(comment="Display name (defaults to the ID).")
    type: Mapped[JobType] = mapped_column(Text, comment="Scheduler type: service, batch, system or sysbatch.")
    priority: Mapped[int] = mapped_column(Integer, comment="Priority 1-100; orders evals and plans.")
    status: Mapped[str] = mapped_column(
        comment="Status as the last write of the job set it (pending on register, dead on stop); the API answers "
        "with corral_job_status_v1(jobs), derived from allocations and evaluations."
    )
    status_description: Mapped[str] = mapped_column(server_default=text("''"), comment="Why the job has its status.")
    status_updated_at: Mapped[datetime] = mapped_column(
        comment="When status last changed; job GC measures its threshold from here."
    )
    stop: Mapped[bool] = mapped_column(comment="True once the job was stopped (deregistered).")
    purged_at: Mapped[datetime | None] = mapped_column(
        comment="Set by a purge: the job is gone for the API and waits for GC to delete the row "
        "once its allocations are terminal (it still owns them until then)."
    )
    version: Mapped[int] = mapped_column(Integer, comment="Current version number (job_versions).")
    job_modify_index: Mapped[int] = mapped_column(
        comment="State index of the last change to the job specification (check-and-set)."
    )
    submit_time: Mapped[datetime] = mapped_column(comment="When the current version was submitted.")
    datacenters: Mapped[list[str]] = mapped_column(comment="Datacenters (globs allowed) to place in.")
    node_pool: Mapped[str] = mapped_column(
        ForeignKey("node_pools.name", ondelete="RESTRICT"), index=True, comment="Node pool the job targets."
    )
    parent_id: Mapped[str | None] = mapped_column(
        comment="Parent periodic or parameterized job of a launched child (foreign key: a parent "
        "outlives its children)."
    )
    periodic: Mapped[bool] = mapped_column(
        comment="True when the job has a periodic block (enabled or not): it launches children "
        "and is never placed itself."
    )
    parameterized: Mapped[bool] = mapped_column(comment="True when the job is a parameterized template.")
    dispatched: Mapped[bool] = mapped_column(comment="True for a child dispatched from a parameterized job.")
    all_at_once: Mapped[bool] = mapped_column(comment="Plans must be applied whole or not at all.")
    stable: Mapped[bool] = mapped_column(comment="The current version was marked stable by a deployment.")
    spec: Mapped[JobSpec] = mapped_column(
        JSONB, comment="The current version's full Nomad job specification (API JSON, normalized)."
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()
    created_at: Mapped[datetime] = created_at_column()
    updated_at: Mapped[datetime] = updated_at_column()


class JobVersion(Base):
    __tablename__ = "job_versions"
    __table_args__ = (
        ForeignKeyConstraint(["namespace", "job_id"], ["jobs.namespace", "jobs.id"], ondelete="CASCADE"),
        {"comment": "Every submitted version of a job, newest tracked ones kept (Nomad keeps 6)."},
    )

    namespace: Mapped[str] = mapped_column(primary_key=True, comment="Namespace of the job.")
    job_id: Mapped[str] = mapped_column(primary_key=True, comment="The job this version belongs to.")
    version: Mapped[int] = mapped_column(Integer, primary_key=True, comment="Version number, from 0.")
    spec: Mapped[JobSpec] = mapped_column(JSONB, comment="The full Nomad job specification of this version.")
    job_modify_index: Mapped[int] = mapped_column(comment="State index at which this version was written.")
    stable: Mapped[bool] = mapped_column(comment="Marked stable by a successful deployment.")
    version_tag: Mapped[JobVersionTagSpec | None] = mapped_column(
        JSONB, comment="Optional {Name, Description} tag; a tagged version is never garbage collected."
    )
    submit_time: Mapped[datetime] = mapped_column(comment="When this version was submitted.")
    created_at: Mapped[datetime] = created_at_column()


class PeriodicLaunch(Base):
    __tablename__ = "periodic_launches"
    __table_args__ = (
        ForeignKeyConstraint(["namespace", "job_id"], ["jobs.namespace", "jobs.id"], ondelete="CASCADE"),
        {"comment": "Last launch of each periodic job, so a new leader neither skips nor repeats one."},
    )

    namespace: Mapped[str] = mapped_column(primary_key=True, comment="Namespace of the periodic job.")
    job_id: Mapped[str] = mapped_column(primary_key=True, comment="The periodic parent job.")
    launch_time: Mapped[datetime] = mapped_column(
        comment="Scheduled time of the last launch the leader dealt with (launched, or skipped). It "
        "only moves forward, so no time is ever launched twice, whichever leader tries."
    )
    skipped: Mapped[bool] = mapped_column(
        server_default=text("false"),
        comment="True when the launch at launch_time was skipped: prohibit_overlap and a child still running.",
    )
    create_index: Mapped[int] = create_index_column()
    modify_index: Mapped[int] = modify_index_column()


class JobSubmission(Base):
    __tablename__ = "job_submissions"
    __table_args__ = (
        ForeignKeyConstraint(
            ["namespace", "job_id", "version"],
            ["job_versions.namespace", "job_versions.job_id", "job_versions.version"],
            ondelete="CASCADE",
        ),
        {
            "comment": "The source a job version was submitted as (Nomad's JobSubmission: HCL or JSON text "
            "and its variables), kept while the version is; served by /v1/job/:id/submission."
        },
    )

    namespace: Mapped[str] = mapped_column(primary_key=True, comment="Namespace of the job.")
    job_id: Mapped[str] = mapped_column(primary_key=True, comment="The job.")
    version: Mapped[int] = mapped_column(Integer, primary_key=True, comment="The job version this source made.")
    source: Mapped[str] = mapped_column(comment="The job file's text, as the submitter sent it.")
    format: Mapped[str] = mapped_column(comment="Its format: hcl2 or json (as Nomad's CLI names them).")
    variable_flags: Mapped[dict[str, str]] = mapped_column(
        JSONB, comment="The -var name=value pairs given with it, as an object of strings."
    )
    variables: Mapped[str] = mapped_column(comment="The contents of the -var-file files given with it.")
    job_modify_index: Mapped[int] = mapped_column(comment="State index of the write that stored it.")
