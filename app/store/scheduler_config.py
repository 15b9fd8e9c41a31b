"""The single scheduler configuration row, with Nomad's check-and-set semantics."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy.orm import Session

from app.db.state_index import next_index
from app.models import SchedulerConfig


@dataclass(frozen=True)
class SchedulerConfigUpdate:
    scheduler_algorithm: str
    preemption_system: bool
    preemption_sysbatch: bool
    preemption_batch: bool
    preemption_service: bool
    memory_oversubscription: bool
    reject_job_registration: bool
    pause_eval_broker: bool


def get_config(session: Session) -> SchedulerConfig:
    config = session.get(SchedulerConfig, 1)
    if config is None:
        raise RuntimeError("scheduler_config row is missing; the schema was not migrated by corral")
    return config


def update_config(session: Session, update: SchedulerConfigUpdate, cas: int | None) -> tuple[bool, int]:
    """Apply the update; with cas, only if the row's modify index still equals it.
    Returns (updated, index)."""
    index = next_index(session, ["scheduler_config"])
    config = session.get(SchedulerConfig, 1, with_for_update=True)
    if config is None:
        raise RuntimeError("scheduler_config row is missing; the schema was not migrated by corral")
    if cas is not None and config.modify_index != cas:
        return False, index
    for name, value in vars(update).items():
        setattr(config, name, value)
    config.modify_index = index
    config.updated_at = datetime.now(UTC)
    return True, index
