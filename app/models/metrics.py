"""Timings each server-side role publishes (Nomad's scheduler timers), so that any API server's
/v1/metrics reports what the workers and appliers measured in their own processes."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Double
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
