"""Nomad's enumerations. Pure: imported by the scheduler, the models and the API alike."""

from __future__ import annotations

JOB_TYPES = ("service", "batch", "system", "sysbatch")
JOB_STATUSES = ("pending", "running", "dead")
# Core evaluations run garbage collection instead of a scheduler (Nomad's `_core` type).
CORE_EVAL_TYPE = "_core"
EVAL_TYPES = (*JOB_TYPES, CORE_EVAL_TYPE)
CORE_JOBS = ("eval-gc", "job-gc", "node-gc", "deployment-gc", "force-gc")
CORE_PRIORITY = 200  # above any job (1-100), as in Nomad

EVAL_STATUSES = ("pending", "blocked", "complete", "failed", "canceled")
EVAL_TERMINAL_STATUSES = ("complete", "failed", "canceled")
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

NODE_STATUSES = ("initializing", "ready", "down", "disconnected")
NODE_ELIGIBILITIES = ("eligible", "ineligible")

ALLOC_DESIRED_STATUSES = ("run", "stop", "evict")
ALLOC_CLIENT_STATUSES = ("pending", "running", "complete", "failed", "lost", "unknown")
ALLOC_CLIENT_TERMINAL_STATUSES = ("complete", "failed", "lost")

DEPLOYMENT_STATUSES = (
    "running",
    "paused",
    "failed",
    "successful",
    "cancelled",
    "initializing",
    "pending",
    "blocked",
    "unblocking",
)
DEPLOYMENT_ACTIVE_STATUSES = (
    "running",
    "paused",
    "initializing",
    "pending",
    "blocked",
    "unblocking",
)

PLAN_STATUSES = ("pending", "applied", "rejected")
SCHEDULER_ALGORITHMS = ("binpack", "spread")
LEADER_ROLES = ("applier", "leader")

DEFAULT_NAMESPACE = "default"
BUILTIN_NODE_POOLS = ("default", "all")


def sql_in(values: tuple[str, ...]) -> str:
    """Render a tuple as a SQL IN list, for CHECK constraints and partial index predicates."""
    return "(" + ", ".join(f"'{v}'" for v in values) + ")"
