"""Nomad's enumerations. Pure: imported by the scheduler, the models and the API alike. The
statuses and types are the tuples of app.wire's Literal aliases, so a value the JSON types
accept is one the CHECK constraints accept."""

from __future__ import annotations

from typing import get_args

from app.wire.allocation import AllocClientStatus, AllocClientTerminalStatus, AllocDesiredStatus
from app.wire.deployment import DeploymentActiveStatus, DeploymentStatus
from app.wire.evaluation import EvalStatus, EvalTerminalStatus
from app.wire.job import JobStatus, JobType
from app.wire.node import NodeEligibility, NodeStatus

JOB_TYPES: tuple[JobType, ...] = get_args(JobType)
JOB_STATUSES: tuple[JobStatus, ...] = get_args(JobStatus)


def job_status(value: str) -> JobStatus:
    """A status read from the database as its Literal (the CHECK constraint and
    corral_job_status_v1 allow nothing else; a stray value is a bug worth a loud error)."""
    if value not in JOB_STATUSES:
        raise ValueError(f"job status {value!r} is none of {', '.join(JOB_STATUSES)}")
    return value


# Core evaluations run garbage collection instead of a scheduler (Nomad's `_core` type).
CORE_EVAL_TYPE = "_core"
EVAL_TYPES = (*JOB_TYPES, CORE_EVAL_TYPE)
CORE_JOBS = ("eval-gc", "job-gc", "node-gc", "deployment-gc", "force-gc")
CORE_PRIORITY = 200  # above any job (1-100), as in Nomad

EVAL_STATUSES: tuple[EvalStatus, ...] = get_args(EvalStatus)
EVAL_TERMINAL_STATUSES: tuple[EvalTerminalStatus, ...] = get_args(EvalTerminalStatus)
EVAL_TRIGGERS = (
    "job-register",
    "job-deregister",
    "periodic-job",
    "node-drain",
    "node-update",
    "alloc-stop",
    "scheduled",
    "rolling-update",
    "deployment-watcher",
    "failed-follow-up",
    "max-plan-attempts",
    "alloc-failure",
    "alloc-reschedule",
    "queued-allocs",
    "preemption",
    "job-scaling",
    "max-disconnect-timeout",
    "reconnect",
)

NODE_STATUSES: tuple[NodeStatus, ...] = get_args(NodeStatus)
NODE_ELIGIBILITIES: tuple[NodeEligibility, ...] = get_args(NodeEligibility)

ALLOC_DESIRED_STATUSES: tuple[AllocDesiredStatus, ...] = get_args(AllocDesiredStatus)
ALLOC_CLIENT_STATUSES: tuple[AllocClientStatus, ...] = get_args(AllocClientStatus)
ALLOC_CLIENT_TERMINAL_STATUSES: tuple[AllocClientTerminalStatus, ...] = get_args(AllocClientTerminalStatus)

DEPLOYMENT_STATUSES: tuple[DeploymentStatus, ...] = get_args(DeploymentStatus)
DEPLOYMENT_ACTIVE_STATUSES: tuple[DeploymentActiveStatus, ...] = get_args(DeploymentActiveStatus)

PLAN_STATUSES = ("pending", "applied", "rejected")
SCHEDULER_ALGORITHMS = ("binpack", "spread")
LEADER_ROLES = ("applier", "leader")

DEFAULT_NAMESPACE = "default"
BUILTIN_NODE_POOLS = ("default", "all")


def sql_in(values: tuple[str, ...]) -> str:
    """Render a tuple as a SQL IN list, for CHECK constraints and partial index predicates."""
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"
