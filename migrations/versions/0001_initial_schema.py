"""initial schema: every table of the system, seed rows, storage settings, psql views

Revision ID: 0001
Revises:
Create Date: 2026-11-21 13:33:44.490622
"""

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from app.db.schema import SQL_DIR

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "leader_terms",
        sa.Column("role", sa.Text(), nullable=False, comment="applier or leader."),
        sa.Column("term", sa.BigInteger(), nullable=False, comment="Incremented at every election."),
        sa.Column("holder", sa.Text(), nullable=False, comment="host:pid of the holder."),
        sa.Column(
            "holder_backend_pid",
            sa.Integer(),
            nullable=False,
            comment="Postgres backend pid of the holder's lock connection (for takeover).",
        ),
        sa.Column(
            "acquired_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When this term began.",
        ),
        sa.Column(
            "renewed_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="Last renewal; stale means the holder is gone.",
        ),
        sa.CheckConstraint("role IN ('applier', 'leader')", name=op.f("ck_leader_terms_role")),
        sa.PrimaryKeyConstraint("role", name=op.f("pk_leader_terms")),
        comment="Who holds each singleton role. The holder renews renewed_at every second; every leader-only write checks its term here (fencing).",
    )
    op.create_table(
        "namespaces",
        sa.Column("name", sa.Text(), nullable=False, comment="Namespace name, e.g. 'default'."),
        sa.Column(
            "description",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Free text shown to operators.",
        ),
        sa.Column(
            "meta",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="User metadata (string map).",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time the row was created.",
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_namespaces")),
        comment="Namespaces isolate jobs; every job belongs to exactly one.",
    )
    op.create_table(
        "node_pools",
        sa.Column(
            "name",
            sa.Text(),
            nullable=False,
            comment="Pool name; 'default' and 'all' are built in.",
        ),
        sa.Column(
            "description",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Free text shown to operators.",
        ),
        sa.Column(
            "meta",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="User metadata (string map).",
        ),
        sa.Column(
            "scheduler_algorithm",
            sa.Text(),
            nullable=True,
            comment="Overrides the cluster scheduler algorithm for this pool (binpack or spread).",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time the row was created.",
        ),
        sa.CheckConstraint(
            "scheduler_algorithm IS NULL OR scheduler_algorithm IN ('binpack', 'spread')",
            name=op.f("ck_node_pools_scheduler_algorithm"),
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_node_pools")),
        comment="Node pools group nodes; jobs target one pool ('all' means every pool).",
    )
    op.create_table(
        "scheduler_config",
        sa.Column("id", sa.SmallInteger(), nullable=False, comment="Always 1."),
        sa.Column(
            "scheduler_algorithm",
            sa.Text(),
            server_default=sa.text("'binpack'"),
            nullable=False,
            comment="binpack (default) or spread.",
        ),
        sa.Column(
            "preemption_system",
            sa.Boolean(),
            server_default=sa.text("true"),
            nullable=False,
            comment="System jobs may preempt lower-priority allocations.",
        ),
        sa.Column(
            "preemption_sysbatch",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Sysbatch jobs may preempt.",
        ),
        sa.Column(
            "preemption_batch",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Batch jobs may preempt.",
        ),
        sa.Column(
            "preemption_service",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Service jobs may preempt.",
        ),
        sa.Column(
            "memory_oversubscription",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Tasks may set memory_max above memory.",
        ),
        sa.Column(
            "reject_job_registration",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Refuse job registrations (maintenance).",
        ),
        sa.Column(
            "pause_eval_broker",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Workers claim nothing while true.",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "updated_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time of the last write to the row.",
        ),
        sa.CheckConstraint(
            "scheduler_algorithm IN ('binpack', 'spread')",
            name=op.f("ck_scheduler_config_algorithm"),
        ),
        sa.CheckConstraint("id = 1", name=op.f("ck_scheduler_config_single_row")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_scheduler_config")),
        comment="The one scheduler configuration row (Nomad's SchedulerConfiguration).",
    )
    op.create_table(
        "state_index",
        sa.Column("name", sa.Text(), nullable=False, comment="'_global' or a table name."),
        sa.Column("value", sa.BigInteger(), nullable=False, comment="Latest index written to that table."),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_state_index")),
        comment="Commit-ordered state index. Writers bump '_global' (a row lock, so indexes become visible in order) and stamp it on the tables they touch.",
    )
    op.create_table(
        "jobs",
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace the job lives in."),
        sa.Column("id", sa.Text(), nullable=False, comment="Job ID, unique per namespace."),
        sa.Column("name", sa.Text(), nullable=False, comment="Display name (defaults to the ID)."),
        sa.Column(
            "type",
            sa.Text(),
            nullable=False,
            comment="Scheduler type: service, batch, system or sysbatch.",
        ),
        sa.Column(
            "priority",
            sa.Integer(),
            nullable=False,
            comment="Priority 1-100; orders evals and plans.",
        ),
        sa.Column(
            "status",
            sa.Text(),
            nullable=False,
            comment="pending (nothing placed yet), running, or dead (stopped or finished).",
        ),
        sa.Column(
            "status_description",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Why the job has its status.",
        ),
        sa.Column(
            "status_updated_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When status last changed; job GC measures its threshold from here.",
        ),
        sa.Column(
            "stop",
            sa.Boolean(),
            nullable=False,
            comment="True once the job was stopped (deregistered).",
        ),
        sa.Column(
            "purged_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=True,
            comment="Set by a purge: the job is gone for the API and waits for GC to delete the row once its allocations are terminal (it still owns them until then).",
        ),
        sa.Column(
            "version",
            sa.Integer(),
            nullable=False,
            comment="Current version number (job_versions).",
        ),
        sa.Column(
            "job_modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last change to the job specification (check-and-set).",
        ),
        sa.Column(
            "submit_time",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When the current version was submitted.",
        ),
        sa.Column(
            "datacenters",
            postgresql.ARRAY(sa.Text()),
            nullable=False,
            comment="Datacenters (globs allowed) to place in.",
        ),
        sa.Column("node_pool", sa.Text(), nullable=False, comment="Node pool the job targets."),
        sa.Column(
            "parent_id",
            sa.Text(),
            nullable=True,
            comment="Parent periodic or parameterized job of a launched child (soft reference).",
        ),
        sa.Column(
            "periodic",
            sa.Boolean(),
            nullable=False,
            comment="True when the job has an enabled periodic block.",
        ),
        sa.Column(
            "parameterized",
            sa.Boolean(),
            nullable=False,
            comment="True when the job is a parameterized template.",
        ),
        sa.Column(
            "dispatched",
            sa.Boolean(),
            nullable=False,
            comment="True for a child dispatched from a parameterized job.",
        ),
        sa.Column(
            "all_at_once",
            sa.Boolean(),
            nullable=False,
            comment="Plans must be applied whole or not at all.",
        ),
        sa.Column(
            "stable",
            sa.Boolean(),
            nullable=False,
            comment="The current version was marked stable by a deployment.",
        ),
        sa.Column(
            "spec",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="The current version's full Nomad job specification (API JSON, normalized).",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time the row was created.",
        ),
        sa.Column(
            "updated_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time of the last write to the row.",
        ),
        sa.CheckConstraint("status IN ('pending', 'running', 'dead')", name=op.f("ck_jobs_status")),
        sa.CheckConstraint("type IN ('service', 'batch', 'system', 'sysbatch')", name=op.f("ck_jobs_type")),
        sa.CheckConstraint("priority BETWEEN 1 AND 100", name=op.f("ck_jobs_priority")),
        sa.CheckConstraint("version >= 0", name=op.f("ck_jobs_version")),
        sa.ForeignKeyConstraint(
            ["namespace"], ["namespaces.name"], name=op.f("fk_jobs_namespace"), ondelete="RESTRICT"
        ),
        sa.ForeignKeyConstraint(
            ["node_pool"], ["node_pools.name"], name=op.f("fk_jobs_node_pool"), ondelete="RESTRICT"
        ),
        sa.PrimaryKeyConstraint("namespace", "id", name=op.f("pk_jobs")),
        comment="Jobs: the desired state users submit. spec holds the current Nomad job JSON.",
    )
    op.create_index(
        "ix_jobs_gc",
        "jobs",
        ["status_updated_at"],
        unique=False,
        postgresql_where=sa.text("status = 'dead'"),
    )
    op.create_index("ix_jobs_parent", "jobs", ["namespace", "parent_id"], unique=False)
    op.create_table(
        "nodes",
        sa.Column("id", sa.UUID(), nullable=False, comment="Node ID chosen by the client."),
        sa.Column(
            "secret_hash",
            sa.Text(),
            nullable=False,
            comment="sha256 of the node's SecretID; the secret itself is only ever returned to the node.",
        ),
        sa.Column("name", sa.Text(), nullable=False, comment="Node name (usually the hostname)."),
        sa.Column("datacenter", sa.Text(), nullable=False, comment="Datacenter the node is in."),
        sa.Column(
            "node_class",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Operator-set class.",
        ),
        sa.Column("node_pool", sa.Text(), nullable=False, comment="Node pool the node belongs to."),
        sa.Column(
            "computed_class",
            sa.Text(),
            nullable=False,
            comment="Hash of the scheduling-relevant fingerprint (datacenter, class, pool, attributes and meta without unique.*); feasibility is cached per class.",
        ),
        sa.Column(
            "status",
            sa.Text(),
            nullable=False,
            comment="initializing, ready, down or disconnected.",
        ),
        sa.Column(
            "status_description",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Why the node has its status.",
        ),
        sa.Column(
            "status_updated_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When status last changed; node GC measures its threshold from here.",
        ),
        sa.Column(
            "scheduling_eligibility",
            sa.Text(),
            nullable=False,
            comment="eligible or ineligible for new placements (draining implies ineligible).",
        ),
        sa.Column(
            "drain_strategy",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Active drain: {DrainSpec:{Deadline,IgnoreSystemJobs},ForceDeadline,StartedAt}; NULL when not draining.",
        ),
        sa.Column(
            "drain",
            sa.Boolean(),
            sa.Computed("drain_strategy IS NOT NULL", persisted=True),
            nullable=False,
            comment="True while a drain is in progress (derived from drain_strategy).",
        ),
        sa.Column(
            "last_drain",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Metadata of the most recent drain: status, started and updated times, meta.",
        ),
        sa.Column(
            "attributes",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Fingerprinted attributes (${attr.*}).",
        ),
        sa.Column(
            "meta",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Operator metadata (${meta.*}).",
        ),
        sa.Column(
            "drivers",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Task drivers: name -> {Detected, Healthy, HealthDescription, Attributes}.",
        ),
        sa.Column("cpu_shares", sa.Integer(), nullable=False, comment="Total CPU in MHz."),
        sa.Column("memory_mb", sa.Integer(), nullable=False, comment="Total memory in MB."),
        sa.Column("disk_mb", sa.Integer(), nullable=False, comment="Total allocatable disk in MB."),
        sa.Column(
            "reserved_cpu",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="CPU MHz held back from scheduling.",
        ),
        sa.Column(
            "reserved_memory_mb",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="Memory MB held back from scheduling.",
        ),
        sa.Column(
            "reserved_disk_mb",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="Disk MB held back from scheduling.",
        ),
        sa.Column(
            "reserved_ports",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Host ports held back, Nomad syntax e.g. '22,80,8000-8100'.",
        ),
        sa.Column(
            "node_resources",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Full NodeResources as the client reported them (networks, devices, cores).",
        ),
        sa.Column(
            "reserved_resources",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Full ReservedResources as reported.",
        ),
        sa.Column(
            "http_addr",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Client HTTP address.",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time the row was created.",
        ),
        sa.Column(
            "updated_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time of the last write to the row.",
        ),
        sa.CheckConstraint(
            "scheduling_eligibility IN ('eligible', 'ineligible')",
            name=op.f("ck_nodes_scheduling_eligibility"),
        ),
        sa.CheckConstraint(
            "status IN ('initializing', 'ready', 'down', 'disconnected')",
            name=op.f("ck_nodes_status"),
        ),
        sa.CheckConstraint(
            "cpu_shares >= 0 AND memory_mb >= 0 AND disk_mb >= 0 AND reserved_cpu >= 0 AND reserved_memory_mb >= 0 AND reserved_disk_mb >= 0",
            name=op.f("ck_nodes_resources"),
        ),
        sa.ForeignKeyConstraint(
            ["node_pool"], ["node_pools.name"], name=op.f("fk_nodes_node_pool"), ondelete="RESTRICT"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_nodes")),
        comment="Client nodes: capacity, fingerprint and lifecycle state. Heartbeats live apart.",
    )
    op.create_index("ix_nodes_computed_class", "nodes", ["computed_class"], unique=False)
    op.create_index(
        "ix_nodes_gc",
        "nodes",
        ["status_updated_at"],
        unique=False,
        postgresql_where=sa.text("status = 'down'"),
    )
    op.create_table(
        "deployments",
        sa.Column("id", sa.UUID(), nullable=False, comment="Deployment ID."),
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the job."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="Job being deployed."),
        sa.Column("job_version", sa.Integer(), nullable=False, comment="Job version being rolled out."),
        sa.Column(
            "job_modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="Job modify index of that version.",
        ),
        sa.Column(
            "job_spec_modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="Job spec modify index of that version.",
        ),
        sa.Column(
            "job_create_index",
            sa.BigInteger(),
            nullable=False,
            comment="Create index of the job (detects re-creation).",
        ),
        sa.Column(
            "is_multiregion",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Multiregion rollout.",
        ),
        sa.Column(
            "status",
            sa.Text(),
            nullable=False,
            comment="running, paused, failed, successful, cancelled, ...",
        ),
        sa.Column(
            "status_description",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Why the deployment has its status.",
        ),
        sa.Column(
            "task_groups",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Group -> DeploymentState {DesiredTotal, PlacedAllocs, HealthyAllocs, Promoted, ...}.",
        ),
        sa.Column(
            "eval_priority",
            sa.Integer(),
            nullable=False,
            comment="Priority of evals the deployment creates.",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "create_time",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="When created.",
        ),
        sa.Column(
            "modify_time",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Last change; deployment GC measures from here.",
        ),
        sa.CheckConstraint(
            "status IN ('running', 'paused', 'failed', 'successful', 'cancelled', 'initializing', 'pending', 'blocked', 'unblocking')",
            name=op.f("ck_deployments_status"),
        ),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id"],
            ["jobs.namespace", "jobs.id"],
            name=op.f("fk_deployments_namespace_job_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deployments")),
        comment="Deployments: rolling updates and canaries of one job version.",
    )
    op.create_index(
        "ix_deployments_active",
        "deployments",
        ["namespace", "job_id"],
        unique=False,
        postgresql_where=sa.text("status IN ('running', 'paused', 'initializing', 'pending', 'blocked', 'unblocking')"),
    )
    op.create_index(
        "ix_deployments_namespace_job_id",
        "deployments",
        ["namespace", "job_id", "create_index"],
        unique=False,
    )
    op.create_table(
        "job_versions",
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the job."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="The job this version belongs to."),
        sa.Column("version", sa.Integer(), nullable=False, comment="Version number, from 0."),
        sa.Column(
            "spec",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=False,
            comment="The full Nomad job specification of this version.",
        ),
        sa.Column(
            "job_modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index at which this version was written.",
        ),
        sa.Column(
            "stable",
            sa.Boolean(),
            nullable=False,
            comment="Marked stable by a successful deployment.",
        ),
        sa.Column(
            "version_tag",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Optional {Name, Description} tag; a tagged version is never garbage collected.",
        ),
        sa.Column(
            "submit_time",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When this version was submitted.",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time the row was created.",
        ),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id"],
            ["jobs.namespace", "jobs.id"],
            name=op.f("fk_job_versions_namespace_job_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("namespace", "job_id", "version", name=op.f("pk_job_versions")),
        comment="Every submitted version of a job, newest tracked ones kept (Nomad keeps 6).",
    )
    op.create_table(
        "node_heartbeats",
        sa.Column("node_id", sa.UUID(), nullable=False, comment="The node."),
        sa.Column(
            "last_seen_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="When the node last heartbeated.",
        ),
        sa.Column(
            "ttl_ms",
            sa.Integer(),
            nullable=False,
            comment="TTL granted to the node at its last heartbeat.",
        ),
        sa.Column(
            "expires_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="last_seen_at + ttl + grace: after this the node is marked down.",
        ),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"], name=op.f("fk_node_heartbeats_node_id"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("node_id", name=op.f("pk_node_heartbeats")),
        comment="Last heartbeat per node. UNLOGGED: lost on a crash by design; the leader then grants every node the failover TTL before marking any down.",
        prefixes=["UNLOGGED"],
    )
    op.create_index("ix_node_heartbeats_expires_at", "node_heartbeats", ["expires_at"], unique=False)
    op.create_table(
        "periodic_launches",
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the periodic job."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="The periodic parent job."),
        sa.Column(
            "launch_time",
            postgresql.TIMESTAMP(timezone=True),
            nullable=False,
            comment="Scheduled time of the last launch.",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id"],
            ["jobs.namespace", "jobs.id"],
            name=op.f("fk_periodic_launches_namespace_job_id"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("namespace", "job_id", name=op.f("pk_periodic_launches")),
        comment="Last launch of each periodic job, so a new leader neither skips nor repeats one.",
    )
    op.create_table(
        "evaluations",
        sa.Column("id", sa.UUID(), nullable=False, comment="Evaluation ID."),
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the job."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="The job to evaluate."),
        sa.Column(
            "priority",
            sa.Integer(),
            nullable=False,
            comment="Priority (the job's unless overridden).",
        ),
        sa.Column(
            "type",
            sa.Text(),
            nullable=False,
            comment="Scheduler that processes it: service, batch, system, sysbatch.",
        ),
        sa.Column(
            "triggered_by",
            sa.Text(),
            nullable=False,
            comment="What caused it: job-register, node-update, ...",
        ),
        sa.Column(
            "job_modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="Job modify index when the eval was created.",
        ),
        sa.Column(
            "node_id",
            sa.UUID(),
            nullable=True,
            comment="Node whose change triggered it (node-update, node-drain; system blocked evals).",
        ),
        sa.Column(
            "node_modify_index",
            sa.BigInteger(),
            nullable=True,
            comment="Node modify index at creation.",
        ),
        sa.Column(
            "deployment_id",
            sa.UUID(),
            nullable=True,
            comment="Deployment that triggered it or that it advanced.",
        ),
        sa.Column(
            "status",
            sa.Text(),
            nullable=False,
            comment="pending, blocked, complete, failed or canceled.",
        ),
        sa.Column(
            "status_description",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Why the eval has its status.",
        ),
        sa.Column(
            "wait_ns",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="Nomad's legacy Wait duration in nanoseconds.",
        ),
        sa.Column(
            "wait_until",
            postgresql.TIMESTAMP(timezone=True),
            nullable=True,
            comment="Not claimable before this time (delayed reschedules, disconnect timeouts).",
        ),
        sa.Column(
            "not_before",
            postgresql.TIMESTAMP(timezone=True),
            nullable=True,
            comment="Broker back-off after a nack or a failed follow-up: not claimable before this.",
        ),
        sa.Column(
            "next_eval",
            sa.UUID(),
            nullable=True,
            comment="Eval created to follow this one (failed follow-up, rolling update).",
        ),
        sa.Column("previous_eval", sa.UUID(), nullable=True, comment="Eval this one follows."),
        sa.Column(
            "blocked_eval",
            sa.UUID(),
            nullable=True,
            comment="Blocked eval created because this one could not place everything.",
        ),
        sa.Column(
            "failed_tg_allocs",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Per task group placement failure metrics (AllocMetric).",
        ),
        sa.Column(
            "class_eligibility",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Computed class -> eligible, as seen by the scheduler; drives unblocking.",
        ),
        sa.Column(
            "escaped_computed_class",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Constraints reach beyond the computed class (unique.*): any node change unblocks.",
        ),
        sa.Column(
            "quota_limit_reached",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Quota that blocked placement (kept for API parity).",
        ),
        sa.Column(
            "annotate_plan",
            sa.Boolean(),
            server_default=sa.text("false"),
            nullable=False,
            comment="Ask the scheduler to annotate its plan (job plan).",
        ),
        sa.Column(
            "queued_allocations",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Task group -> allocations left unplaced.",
        ),
        sa.Column(
            "plan_annotations",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Desired task group updates and preemptions computed by the scheduler.",
        ),
        sa.Column(
            "snapshot_index",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="State index the scheduler worked from.",
        ),
        sa.Column(
            "lease_token",
            sa.UUID(),
            nullable=True,
            comment="Fencing token of the current claim; every worker write must present it.",
        ),
        sa.Column("lease_owner", sa.Text(), nullable=True, comment="Worker holding the claim (host:pid)."),
        sa.Column(
            "lease_expires_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=True,
            comment="The claim lapses at this time unless renewed; then any worker may take it.",
        ),
        sa.Column(
            "delivery_count",
            sa.Integer(),
            server_default=sa.text("0"),
            nullable=False,
            comment="How many times it was claimed (limit 3).",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "create_time",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="When the eval was created.",
        ),
        sa.Column(
            "modify_time",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="When the eval last changed; eval GC measures from here.",
        ),
        sa.CheckConstraint(
            "lease_token IS NULL OR status = 'pending'",
            name=op.f("ck_evaluations_lease_only_while_pending"),
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'blocked', 'complete', 'failed', 'canceled')",
            name=op.f("ck_evaluations_status"),
        ),
        sa.CheckConstraint(
            "triggered_by IN ('job-register', 'job-deregister', 'periodic-job', 'node-drain', 'node-update', 'alloc-stop', 'scheduled', 'rolling-update', 'deployment-watcher', 'failed-follow-up', 'max-plan-attempts', 'alloc-failure', 'alloc-reschedule', 'queued-allocs', 'preemption', 'job-scaling', 'max-disconnect-timeout', 'reconnect')",
            name=op.f("ck_evaluations_triggered_by"),
        ),
        sa.CheckConstraint("type IN ('service', 'batch', 'system', 'sysbatch')", name=op.f("ck_evaluations_type")),
        sa.CheckConstraint(
            "(lease_token IS NULL) = (lease_expires_at IS NULL)",
            name=op.f("ck_evaluations_lease_fields_together"),
        ),
        sa.CheckConstraint("delivery_count >= 0", name=op.f("ck_evaluations_delivery_count")),
        sa.CheckConstraint("priority >= 1", name=op.f("ck_evaluations_priority")),
        sa.ForeignKeyConstraint(
            ["blocked_eval"],
            ["evaluations.id"],
            name=op.f("fk_evaluations_blocked_eval"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployments.id"],
            name=op.f("fk_evaluations_deployment_id"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id"],
            ["jobs.namespace", "jobs.id"],
            name=op.f("fk_evaluations_namespace_job_id"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["next_eval"],
            ["evaluations.id"],
            name=op.f("fk_evaluations_next_eval"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"], name=op.f("fk_evaluations_node_id"), ondelete="SET NULL"),
        sa.ForeignKeyConstraint(
            ["previous_eval"],
            ["evaluations.id"],
            name=op.f("fk_evaluations_previous_eval"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_evaluations")),
        comment="Evaluations (Nomad fields plus broker lease fields). A pending row with no lease is queued; with a lease it is in flight on a worker.",
    )
    op.create_index(
        "ix_evaluations_blocked",
        "evaluations",
        ["namespace", "job_id"],
        unique=False,
        postgresql_where=sa.text("status = 'blocked'"),
    )
    op.create_index(op.f("ix_evaluations_blocked_eval"), "evaluations", ["blocked_eval"], unique=False)
    op.create_index(op.f("ix_evaluations_deployment_id"), "evaluations", ["deployment_id"], unique=False)
    op.create_index(
        "ix_evaluations_gc",
        "evaluations",
        ["modify_time"],
        unique=False,
        postgresql_where=sa.text("status IN ('complete', 'failed', 'canceled')"),
    )
    op.create_index(
        "ix_evaluations_lease_expiry",
        "evaluations",
        ["lease_expires_at"],
        unique=False,
        postgresql_where=sa.text("lease_token IS NOT NULL"),
    )
    op.create_index(
        "ix_evaluations_namespace_job_id",
        "evaluations",
        ["namespace", "job_id", "create_index"],
        unique=False,
    )
    op.create_index(op.f("ix_evaluations_next_eval"), "evaluations", ["next_eval"], unique=False)
    op.create_index(op.f("ix_evaluations_node_id"), "evaluations", ["node_id"], unique=False)
    op.create_index(op.f("ix_evaluations_previous_eval"), "evaluations", ["previous_eval"], unique=False)
    op.create_index(
        "ix_evaluations_ready",
        "evaluations",
        [sa.literal_column("priority DESC"), "create_index"],
        unique=False,
        postgresql_where=sa.text("status = 'pending' AND lease_token IS NULL"),
    )
    op.create_index(
        "uq_evaluations_in_flight_job",
        "evaluations",
        ["namespace", "job_id"],
        unique=True,
        postgresql_where=sa.text("lease_token IS NOT NULL"),
    )
    op.create_table(
        "allocations",
        sa.Column("id", sa.UUID(), nullable=False, comment="Allocation ID."),
        sa.Column("namespace", sa.Text(), nullable=False, comment="Namespace of the job."),
        sa.Column("job_id", sa.Text(), nullable=False, comment="Job the allocation runs."),
        sa.Column("job_version", sa.Integer(), nullable=False, comment="Job version the allocation runs."),
        sa.Column(
            "eval_id",
            sa.UUID(),
            nullable=False,
            comment="Eval that last placed or updated it; the eval is kept while this row exists.",
        ),
        sa.Column(
            "node_id",
            sa.UUID(),
            nullable=False,
            comment="Node it is placed on; the node row is kept while this row exists.",
        ),
        sa.Column(
            "node_name",
            sa.Text(),
            nullable=False,
            comment="Node name at placement (Nomad's NodeName).",
        ),
        sa.Column("task_group", sa.Text(), nullable=False, comment="Task group of the job."),
        sa.Column("name", sa.Text(), nullable=False, comment="Nomad name: '<job>.<group>[<index>]'."),
        sa.Column(
            "desired_status",
            sa.Text(),
            nullable=False,
            comment="What the servers want: run, stop or evict.",
        ),
        sa.Column(
            "desired_description",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Why desired_status was set.",
        ),
        sa.Column(
            "desired_transition",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Pending transitions: {Migrate, Reschedule, ForceReschedule, NoShutdownDelay}.",
        ),
        sa.Column(
            "client_status",
            sa.Text(),
            nullable=False,
            comment="What the client reports: pending, running, complete, failed, lost or unknown.",
        ),
        sa.Column(
            "client_description",
            sa.Text(),
            server_default=sa.text("''"),
            nullable=False,
            comment="Client's explanation of client_status.",
        ),
        sa.Column(
            "task_states",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Task name -> {State, Failed, Restarts, Events...}.",
        ),
        sa.Column("deployment_id", sa.UUID(), nullable=True, comment="Deployment that created it."),
        sa.Column(
            "deployment_status",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Health within its deployment: {Healthy, Timestamp, Canary, ModifyIndex}.",
        ),
        sa.Column(
            "previous_allocation",
            sa.UUID(),
            nullable=True,
            comment="Allocation this one replaces (reschedule, migration, destructive update).",
        ),
        sa.Column(
            "next_allocation",
            sa.UUID(),
            nullable=True,
            comment="Allocation that replaced this one.",
        ),
        sa.Column(
            "preempted_allocations",
            postgresql.ARRAY(sa.UUID()),
            server_default=sa.text("'{}'"),
            nullable=False,
            comment="Allocations evicted to make room for this one.",
        ),
        sa.Column(
            "preempted_by_allocation",
            sa.UUID(),
            nullable=True,
            comment="Allocation whose placement evicted this one.",
        ),
        sa.Column(
            "reschedule_tracker",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Reschedule history: {Events:[{RescheduleTime, PrevAllocID, PrevNodeID, Delay}]}.",
        ),
        sa.Column(
            "followup_eval_id",
            sa.UUID(),
            nullable=True,
            comment="Delayed eval that will reschedule this allocation.",
        ),
        sa.Column(
            "metrics",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Placement metrics (AllocMetric): nodes evaluated, filtered, scores.",
        ),
        sa.Column(
            "cpu",
            sa.Integer(),
            nullable=False,
            comment="CPU MHz reserved on the node (sum over tasks).",
        ),
        sa.Column(
            "memory_mb",
            sa.Integer(),
            nullable=False,
            comment="Memory MB reserved (sum over tasks).",
        ),
        sa.Column(
            "memory_max_mb",
            sa.Integer(),
            nullable=False,
            comment="Memory MB the tasks may burst to.",
        ),
        sa.Column("disk_mb", sa.Integer(), nullable=False, comment="Ephemeral disk MB reserved."),
        sa.Column(
            "host_ports",
            postgresql.ARRAY(sa.BigInteger()),
            server_default=sa.text("'{}'"),
            nullable=False,
            comment="Host ports the allocation holds on the node.",
        ),
        sa.Column(
            "allocated_resources",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Nomad AllocatedResources: per-task resources and shared networks/ports.",
        ),
        sa.Column(
            "create_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the write that created the row.",
        ),
        sa.Column(
            "modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last write to the row (X-Nomad-Index).",
        ),
        sa.Column(
            "alloc_modify_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index of the last server-side change (excludes client updates).",
        ),
        sa.Column(
            "create_time",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="When the allocation was created.",
        ),
        sa.Column(
            "modify_time",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="When it last changed; GC measures from here.",
        ),
        sa.CheckConstraint(
            "client_status IN ('pending', 'running', 'complete', 'failed', 'lost', 'unknown')",
            name=op.f("ck_allocations_client_status"),
        ),
        sa.CheckConstraint("desired_status IN ('run', 'stop', 'evict')", name=op.f("ck_allocations_desired_status")),
        sa.CheckConstraint(
            "cpu >= 0 AND memory_mb >= 0 AND disk_mb >= 0 AND memory_max_mb >= memory_mb",
            name=op.f("ck_allocations_resources"),
        ),
        sa.ForeignKeyConstraint(
            ["deployment_id"],
            ["deployments.id"],
            name=op.f("fk_allocations_deployment_id"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(["eval_id"], ["evaluations.id"], name=op.f("fk_allocations_eval_id")),
        sa.ForeignKeyConstraint(
            ["followup_eval_id"],
            ["evaluations.id"],
            name=op.f("fk_allocations_followup_eval_id"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id", "job_version"],
            ["job_versions.namespace", "job_versions.job_id", "job_versions.version"],
            name=op.f("fk_allocations_namespace_job_id_job_version"),
        ),
        sa.ForeignKeyConstraint(
            ["namespace", "job_id"],
            ["jobs.namespace", "jobs.id"],
            name=op.f("fk_allocations_namespace_job_id"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["next_allocation"],
            ["allocations.id"],
            name=op.f("fk_allocations_next_allocation"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(["node_id"], ["nodes.id"], name=op.f("fk_allocations_node_id")),
        sa.ForeignKeyConstraint(
            ["preempted_by_allocation"],
            ["allocations.id"],
            name=op.f("fk_allocations_preempted_by_allocation"),
            ondelete="SET NULL",
        ),
        sa.ForeignKeyConstraint(
            ["previous_allocation"],
            ["allocations.id"],
            name=op.f("fk_allocations_previous_allocation"),
            ondelete="SET NULL",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_allocations")),
        comment="Allocations: the mapping of a job's task group onto a node, with its lifecycle.",
    )
    op.create_index(op.f("ix_allocations_deployment_id"), "allocations", ["deployment_id"], unique=False)
    op.create_index(op.f("ix_allocations_eval_id"), "allocations", ["eval_id"], unique=False)
    op.create_index(op.f("ix_allocations_followup_eval_id"), "allocations", ["followup_eval_id"], unique=False)
    op.create_index(
        "ix_allocations_gc",
        "allocations",
        ["modify_time"],
        unique=False,
        postgresql_where=sa.text("NOT (desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown'))"),
    )
    op.create_index(
        "ix_allocations_live_by_node",
        "allocations",
        ["node_id"],
        unique=False,
        postgresql_where=sa.text("desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown')"),
    )
    op.create_index(
        "ix_allocations_namespace_job_id_job_version",
        "allocations",
        ["namespace", "job_id", "job_version"],
        unique=False,
    )
    op.create_index(op.f("ix_allocations_next_allocation"), "allocations", ["next_allocation"], unique=False)
    op.create_index(op.f("ix_allocations_node_id"), "allocations", ["node_id"], unique=False)
    op.create_index(
        op.f("ix_allocations_preempted_by_allocation"),
        "allocations",
        ["preempted_by_allocation"],
        unique=False,
    )
    op.create_index(
        op.f("ix_allocations_previous_allocation"),
        "allocations",
        ["previous_allocation"],
        unique=False,
    )
    op.create_table(
        "plans",
        sa.Column(
            "id",
            sa.BigInteger(),
            sa.Identity(always=True),
            nullable=False,
            comment="Plan number, in submit order.",
        ),
        sa.Column("eval_id", sa.UUID(), nullable=False, comment="Evaluation the plan is for."),
        sa.Column(
            "eval_token",
            sa.UUID(),
            nullable=False,
            comment="The eval's lease token at submit; the applier rejects a plan whose token is stale.",
        ),
        sa.Column(
            "attempt",
            sa.Integer(),
            nullable=False,
            comment="1 for the first plan of a claim, +1 per retry.",
        ),
        sa.Column(
            "namespace",
            sa.Text(),
            nullable=False,
            comment="Namespace of the job (for psql readers).",
        ),
        sa.Column("job_id", sa.Text(), nullable=False, comment="Job the plan is for (for psql readers)."),
        sa.Column(
            "priority",
            sa.Integer(),
            nullable=False,
            comment="Job priority; the applier takes higher first.",
        ),
        sa.Column("all_at_once", sa.Boolean(), nullable=False, comment="Apply whole or reject whole."),
        sa.Column(
            "snapshot_index",
            sa.BigInteger(),
            nullable=False,
            comment="State index the worker planned against.",
        ),
        sa.Column(
            "status",
            sa.Text(),
            server_default=sa.text("'pending'"),
            nullable=False,
            comment="pending, applied (fully or partly) or rejected.",
        ),
        sa.Column(
            "node_update",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Node ID -> allocations to stop.",
        ),
        sa.Column(
            "node_allocation",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Node ID -> allocations to create or update.",
        ),
        sa.Column(
            "node_preemptions",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Node ID -> allocations to evict.",
        ),
        sa.Column(
            "deployment",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Deployment to create or update with the plan.",
        ),
        sa.Column(
            "deployment_updates",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'[]'::jsonb"),
            nullable=False,
            comment="Deployment status changes.",
        ),
        sa.Column(
            "annotations",
            postgresql.JSONB(astext_type=sa.Text()),
            nullable=True,
            comment="Plan annotations (job plan).",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time the row was created.",
        ),
        sa.Column(
            "applied_at",
            postgresql.TIMESTAMP(timezone=True),
            nullable=True,
            comment="When the applier decided.",
        ),
        sa.CheckConstraint("status IN ('pending', 'applied', 'rejected')", name=op.f("ck_plans_status")),
        sa.CheckConstraint("attempt >= 1", name=op.f("ck_plans_attempt")),
        sa.ForeignKeyConstraint(["eval_id"], ["evaluations.id"], name=op.f("fk_plans_eval_id"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_plans")),
        comment="Plans: a worker's proposed placements, stops and preemptions for one eval.",
    )
    op.create_index(
        "ix_plans_queue",
        "plans",
        [sa.literal_column("priority DESC"), "id"],
        unique=False,
        postgresql_where=sa.text("status = 'pending'"),
    )
    op.create_index("uq_plans_eval_attempt", "plans", ["eval_id", "eval_token", "attempt"], unique=True)
    op.create_table(
        "plan_results",
        sa.Column(
            "plan_id",
            sa.BigInteger(),
            nullable=False,
            comment="The plan (one result per plan: a plan is applied at most once).",
        ),
        sa.Column(
            "node_update",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Node ID -> stopped allocation IDs committed.",
        ),
        sa.Column(
            "node_allocation",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Node ID -> placed allocation IDs committed.",
        ),
        sa.Column(
            "node_preemptions",
            postgresql.JSONB(astext_type=sa.Text()),
            server_default=sa.text("'{}'::jsonb"),
            nullable=False,
            comment="Node ID -> evicted allocation IDs committed.",
        ),
        sa.Column(
            "rejected_nodes",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'"),
            nullable=False,
            comment="Nodes whose share of the plan did not fit.",
        ),
        sa.Column(
            "ineligible_nodes",
            postgresql.ARRAY(sa.Text()),
            server_default=sa.text("'{}'"),
            nullable=False,
            comment="Nodes marked ineligible by the rejection tracker.",
        ),
        sa.Column(
            "refresh_index",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="Non-zero on a partial result: re-plan from at least this index.",
        ),
        sa.Column(
            "alloc_index",
            sa.BigInteger(),
            server_default=sa.text("0"),
            nullable=False,
            comment="State index of the commit that wrote the allocations.",
        ),
        sa.Column(
            "applier_term",
            sa.BigInteger(),
            nullable=False,
            comment="Leader term of the applier that decided.",
        ),
        sa.Column(
            "created_at",
            postgresql.TIMESTAMP(timezone=True),
            server_default=sa.text("now()"),
            nullable=False,
            comment="Wall-clock time the row was created.",
        ),
        sa.ForeignKeyConstraint(["plan_id"], ["plans.id"], name=op.f("fk_plan_results_plan_id"), ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("plan_id", name=op.f("pk_plan_results")),
        comment="What the applier committed of each plan, and the refresh index for the rest.",
    )

    op.create_index(op.f("ix_jobs_node_pool"), "jobs", ["node_pool"], unique=False)
    op.create_index(op.f("ix_nodes_node_pool"), "nodes", ["node_pool"], unique=False)
    _seed_rows()
    _tune_storage()
    _create_views()


def downgrade() -> None:
    for view in reversed(VIEWS):
        op.execute(f"DROP VIEW IF EXISTS {view}")
    op.drop_index(op.f("ix_nodes_node_pool"), table_name="nodes")
    op.drop_index(op.f("ix_jobs_node_pool"), table_name="jobs")
    op.drop_table("plan_results")
    op.drop_index("uq_plans_eval_attempt", table_name="plans")
    op.drop_index("ix_plans_queue", table_name="plans", postgresql_where=sa.text("status = 'pending'"))
    op.drop_table("plans")
    op.drop_index(op.f("ix_allocations_previous_allocation"), table_name="allocations")
    op.drop_index(op.f("ix_allocations_preempted_by_allocation"), table_name="allocations")
    op.drop_index(op.f("ix_allocations_node_id"), table_name="allocations")
    op.drop_index(op.f("ix_allocations_next_allocation"), table_name="allocations")
    op.drop_index("ix_allocations_namespace_job_id_job_version", table_name="allocations")
    op.drop_index(
        "ix_allocations_live_by_node",
        table_name="allocations",
        postgresql_where=sa.text("desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown')"),
    )
    op.drop_index(
        "ix_allocations_gc",
        table_name="allocations",
        postgresql_where=sa.text("NOT (desired_status = 'run' AND client_status IN ('pending', 'running', 'unknown'))"),
    )
    op.drop_index(op.f("ix_allocations_followup_eval_id"), table_name="allocations")
    op.drop_index(op.f("ix_allocations_eval_id"), table_name="allocations")
    op.drop_index(op.f("ix_allocations_deployment_id"), table_name="allocations")
    op.drop_table("allocations")
    op.drop_index(
        "uq_evaluations_in_flight_job",
        table_name="evaluations",
        postgresql_where=sa.text("lease_token IS NOT NULL"),
    )
    op.drop_index(
        "ix_evaluations_ready",
        table_name="evaluations",
        postgresql_where=sa.text("status = 'pending' AND lease_token IS NULL"),
    )
    op.drop_index(op.f("ix_evaluations_previous_eval"), table_name="evaluations")
    op.drop_index(op.f("ix_evaluations_node_id"), table_name="evaluations")
    op.drop_index(op.f("ix_evaluations_next_eval"), table_name="evaluations")
    op.drop_index("ix_evaluations_namespace_job_id", table_name="evaluations")
    op.drop_index(
        "ix_evaluations_lease_expiry",
        table_name="evaluations",
        postgresql_where=sa.text("lease_token IS NOT NULL"),
    )
    op.drop_index(
        "ix_evaluations_gc",
        table_name="evaluations",
        postgresql_where=sa.text("status IN ('complete', 'failed', 'canceled')"),
    )
    op.drop_index(op.f("ix_evaluations_deployment_id"), table_name="evaluations")
    op.drop_index(op.f("ix_evaluations_blocked_eval"), table_name="evaluations")
    op.drop_index(
        "ix_evaluations_blocked",
        table_name="evaluations",
        postgresql_where=sa.text("status = 'blocked'"),
    )
    op.drop_table("evaluations")
    op.drop_table("periodic_launches")
    op.drop_index("ix_node_heartbeats_expires_at", table_name="node_heartbeats")
    op.drop_table("node_heartbeats")
    op.drop_table("job_versions")
    op.drop_index("ix_deployments_namespace_job_id", table_name="deployments")
    op.drop_index(
        "ix_deployments_active",
        table_name="deployments",
        postgresql_where=sa.text("status IN ('running', 'paused', 'initializing', 'pending', 'blocked', 'unblocking')"),
    )
    op.drop_table("deployments")
    op.drop_index("ix_nodes_gc", table_name="nodes", postgresql_where=sa.text("status = 'down'"))
    op.drop_index("ix_nodes_computed_class", table_name="nodes")
    op.drop_table("nodes")
    op.drop_index("ix_jobs_parent", table_name="jobs")
    op.drop_index("ix_jobs_gc", table_name="jobs", postgresql_where=sa.text("status = 'dead'"))
    op.drop_table("jobs")
    op.drop_table("state_index")
    op.drop_table("scheduler_config")
    op.drop_table("node_pools")
    op.drop_table("namespaces")
    op.drop_table("leader_terms")


VIEWS = ("v_eval_queue", "v_blocked_evals", "v_plan_queue", "v_node_usage", "v_job_summary")
STATE_INDEX_NAMES = (
    "_global",
    "namespaces",
    "node_pools",
    "jobs",
    "evaluations",
    "allocations",
    "nodes",
    "deployments",
    "plans",
    "scheduler_config",
)

# Queue-like tables churn (claims, leases, status flips): default autovacuum (20 % of the
# table) lets dead tuples pile up and halved a SKIP LOCKED queue's throughput in a minute
# on this class of machine. Free space per page (fillfactor) keeps lease renewals HOT.
HOT_TABLE_STORAGE = {
    "evaluations": "fillfactor = 80",
    "allocations": "fillfactor = 85",
    "plans": "fillfactor = 90",
    "plan_results": "fillfactor = 100",
    "nodes": "fillfactor = 85",
    "node_heartbeats": "fillfactor = 50",
    "state_index": "fillfactor = 50",
    "leader_terms": "fillfactor = 50",
}
AUTOVACUUM = (
    "autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_threshold = 200, "
    "autovacuum_vacuum_insert_scale_factor = 0.05, autovacuum_analyze_scale_factor = 0.05, "
    "autovacuum_vacuum_cost_delay = 1, autovacuum_vacuum_cost_limit = 2000"
)


def _seed_rows() -> None:
    op.execute(
        "INSERT INTO namespaces (name, description, create_index, modify_index) "
        "VALUES ('default', 'Default shared namespace', 1, 1)"
    )
    op.execute(
        "INSERT INTO node_pools (name, description, create_index, modify_index) VALUES "
        "('default', 'Default node pool', 1, 1), "
        "('all', 'Node pool with all nodes in the cluster', 1, 1)"
    )
    op.execute("INSERT INTO scheduler_config (id, create_index, modify_index) VALUES (1, 1, 1)")
    values = ", ".join(f"('{name}', 1)" for name in STATE_INDEX_NAMES)
    op.execute(f"INSERT INTO state_index (name, value) VALUES {values}")


def _tune_storage() -> None:
    for table, fillfactor in HOT_TABLE_STORAGE.items():
        op.execute(f"ALTER TABLE {table} SET ({fillfactor}, {AUTOVACUUM})")


# The exact files this revision runs. A changed view gets a new file (<view>_v2.sql) and a
# new revision that runs it, so this revision always builds what it built when written.
VIEW_FILES = {view: f"{view}_v1.sql" for view in VIEWS}


def _create_views() -> None:
    for view in VIEWS:
        op.execute((SQL_DIR / "views" / VIEW_FILES[view]).read_text())
