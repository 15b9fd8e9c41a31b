"""Timings each server-side role publishes (Nomad's scheduler timers), so that any API server's
/v1/metrics reports what the workers and appliers measured in their own processes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import CheckConstraint, Double, Text
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.orm import Mapped, mapped_column

from app.models.base import Base


class PublishedTiming(Base):
    __tablename__ = "published_timings"
    __table_args__ = {
        "comment": "Cumulative timers and counters of each worker/applier/leader process, published every few "
        "seconds; /v1/metrics sums the rows of processes heard from recently."
    }

    process: Mapped[str] = mapped_column(primary_key=True, comment="role:hostname:pid:start of the publishing process.")
    name: Mapped[str] = mapped_column(primary_key=True, comment="Prometheus name of the timer or counter.")
    labels: Mapped[list[str]] = mapped_column(primary_key=True, comment="Its labels as sorted key=value strings.")
    kind: Mapped[str] = mapped_column(comment="histogram or counter.")
    count: Mapped[float] = mapped_column(Double, comment="Observations (a counter's value).")
    total: Mapped[float] = mapped_column(Double, comment="Sum of the observations in ms (a counter's value).")
    buckets: Mapped[list[float]] = mapped_column(
        ARRAY(Double), comment="Cumulative counts per bucket bound of app.metrics.timings.MS_BUCKETS, then +Inf."
    )
    updated_at: Mapped[datetime] = mapped_column(comment="When the process last published the row.")
    sum_squares: Mapped[float | None] = mapped_column(
        Double, comment="Sum of the squared observations (a counter: of its increments); empty from older roles."
    )
    minimum: Mapped[float | None] = mapped_column(
        Double, comment="Smallest observation (a counter: increment) of the process; empty from older roles."
    )
    maximum: Mapped[float | None] = mapped_column(
        Double, comment="Largest observation (a counter: increment) of the process; empty from older roles."
    )


class TimingInterval(Base):
    __tablename__ = "timing_intervals"
    __table_args__ = {
        "comment": "Each worker/applier/leader process's timers and counters per completed 10 s go-metrics "
        "interval (kept a few minutes); /v1/metrics's JSON merges the processes' last completed interval."
    }

    process: Mapped[str] = mapped_column(primary_key=True, comment="role:hostname:pid:start of the publishing process.")
    name: Mapped[str] = mapped_column(primary_key=True, comment="Prometheus name of the timer or counter.")
    labels: Mapped[list[str]] = mapped_column(primary_key=True, comment="Its labels as sorted key=value strings.")
    interval_start: Mapped[datetime] = mapped_column(
        primary_key=True, comment="Start of the 10 s interval, aligned to the wall clock (go-metrics' Interval)."
    )
    kind: Mapped[str] = mapped_column(comment="histogram (a timer) or counter.")
    count: Mapped[float] = mapped_column(Double, comment="Observations in the interval (a counter: increments).")
    total: Mapped[float] = mapped_column(Double, comment="Sum of the interval's observations (ms for a timer).")
    sum_squares: Mapped[float] = mapped_column(Double, comment="Sum of the squared observations of the interval.")
    minimum: Mapped[float] = mapped_column(Double, comment="Smallest observation of the interval.")
    maximum: Mapped[float] = mapped_column(Double, comment="Largest observation of the interval.")
    updated_at: Mapped[datetime] = mapped_column(comment="When the process published the row.")


class SchedulerWorker(Base):
    __tablename__ = "scheduler_workers"
    __table_args__ = (
        CheckConstraint("status IN ('Starting', 'Started', 'Stopped')", name="status"),
        CheckConstraint(
            "workload_status IN ('Starting', 'WaitingToDequeue', 'Scheduling', 'Backoff', 'Stopped')",
            name="workload_status",
        ),
        {
            "comment": "Each scheduling loop of every `corral worker` process (Nomad's scheduler workers), "
            "published every few seconds; /v1/agent/schedulers lists the loops heard from recently."
        },
    )

    id: Mapped[str] = mapped_column(primary_key=True, comment="The loop's lease owner name: host:pid:hex.")
    process: Mapped[str] = mapped_column(comment="role:hostname:pid:start of the worker process running the loop.")
    enabled_schedulers: Mapped[list[str]] = mapped_column(
        ARRAY(Text), comment="The evaluation types the loop claims (the process's --schedulers)."
    )
    started_at: Mapped[datetime] = mapped_column(comment="When the loop started.")
    status: Mapped[str] = mapped_column(comment="Nomad's worker status: Starting, Started, Stopped.")
    workload_status: Mapped[str] = mapped_column(
        comment="Nomad's workload status when published: WaitingToDequeue, Scheduling, Backoff, Stopped."
    )
    updated_at: Mapped[datetime] = mapped_column(comment="When the process last published the row.")
