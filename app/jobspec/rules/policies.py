"""Rules for lifecycle policies: update, migrate, restart and reschedule blocks."""

from __future__ import annotations

from app.jobspec.durations import SECOND, format_duration
from app.jobspec.errors import FieldError
from app.jobspec.model import MigrateStrategy, ReschedulePolicy, RestartPolicy, UpdateStrategy
from app.jobspec.rules.checks import Problems, at_least, min_duration, one_of

UPDATE_HEALTH_CHECKS = ("checks", "task_states", "manual")
# Draining a node has no operator around to confirm health by hand.
MIGRATE_HEALTH_CHECKS = ("checks", "task_states")
RESTART_MODES = ("fail", "delay")
DELAY_FUNCTIONS = ("constant", "exponential", "fibonacci")

RESCHEDULE_MIN_DELAY = 5 * SECOND
RESCHEDULE_MIN_INTERVAL = 15 * SECOND


def check_update(update: UpdateStrategy, path: str) -> Problems:
    yield from at_least(update.max_parallel, 0, f"{path}.MaxParallel")
    yield from one_of(update.health_check, UPDATE_HEALTH_CHECKS, f"{path}.HealthCheck")
    yield from at_least(update.canary, 0, f"{path}.Canary")
    if update.auto_promote and update.canary <= 0:
        yield FieldError(f"{path}.AutoPromote", "requires Canary to be greater than 0")
    yield from _healthy_window(update.min_healthy_time, update.healthy_deadline, path)
    if update.progress_deadline != 0 and update.progress_deadline <= update.healthy_deadline:
        yield FieldError(
            f"{path}.ProgressDeadline",
            "must be 0 or greater than HealthyDeadline "
            f"({format_duration(update.healthy_deadline)}), "
            f"got {format_duration(update.progress_deadline)}",
        )


def check_migrate(migrate: MigrateStrategy, path: str) -> Problems:
    yield from at_least(migrate.max_parallel, 0, f"{path}.MaxParallel")
    yield from one_of(migrate.health_check, MIGRATE_HEALTH_CHECKS, f"{path}.HealthCheck")
    yield from _healthy_window(migrate.min_healthy_time, migrate.healthy_deadline, path)


def check_restart(policy: RestartPolicy, path: str) -> Problems:
    yield from at_least(policy.attempts, 0, f"{path}.Attempts")
    yield from one_of(policy.mode, RESTART_MODES, f"{path}.Mode")
    if policy.attempts > 0 and policy.attempts * policy.delay > policy.interval:
        yield FieldError(
            f"{path}.Interval",
            f"must leave room for {policy.attempts} restarts "
            f"{format_duration(policy.delay)} apart, got {format_duration(policy.interval)}",
        )


def check_reschedule(policy: ReschedulePolicy, path: str) -> Problems:
    yield from at_least(policy.attempts, 0, f"{path}.Attempts")
    yield from one_of(policy.delay_function, DELAY_FUNCTIONS, f"{path}.DelayFunction")
    yield from min_duration(policy.delay, RESCHEDULE_MIN_DELAY, f"{path}.Delay")
    # Like Nomad, a policy that never reschedules is not held to its delay cap.
    enabled = policy.attempts > 0 or policy.unlimited
    if enabled and policy.delay_function != "constant" and policy.max_delay < policy.delay:
        yield FieldError(
            f"{path}.MaxDelay",
            f"must be at least Delay ({format_duration(policy.delay)}) for a growing delay, "
            f"got {format_duration(policy.max_delay)}",
        )
    if policy.attempts > 0 and not policy.unlimited:
        yield from min_duration(
            policy.interval,
            RESCHEDULE_MIN_INTERVAL,
            f"{path}.Interval",
            "when Attempts is limited",
        )


def _healthy_window(min_healthy_time: int, healthy_deadline: int, path: str) -> Problems:
    if min_healthy_time >= healthy_deadline:
        yield FieldError(
            f"{path}.MinHealthyTime",
            f"must be less than HealthyDeadline ({format_duration(healthy_deadline)}), "
            f"got {format_duration(min_healthy_time)}",
        )
