"""Eligibility: how old a terminal object must be before its collector may take it, and which
collectors a run covers (Nomad's core_sched.go thresholds)."""

from __future__ import annotations

from dataclasses import dataclass

from app.settings.config import Settings
from app.wire.evaluation import CoreParamsJson

SCHEDULED = ("eval-gc", "job-gc", "node-gc", "deployment-gc")
# Forced GC runs every collector; evaluations go before jobs so a big stopped job is trimmed
# in bounded batches before its row goes, and nodes go last, once their allocations are gone.
FORCED_ORDER = ("eval-gc", "job-gc", "deployment-gc", "node-gc")


@dataclass(frozen=True)
class Thresholds:
    """Age (seconds) a terminal object must reach before its collector may take it."""

    eval_s: float
    batch_eval_s: float
    job_s: float
    node_s: float
    deployment_s: float

    @classmethod
    def from_settings(cls, settings: Settings) -> Thresholds:
        return cls(
            eval_s=settings.eval_gc_threshold_s,
            batch_eval_s=settings.batch_eval_gc_threshold_s,
            job_s=settings.job_gc_threshold_s,
            node_s=settings.node_gc_threshold_s,
            deployment_s=settings.deployment_gc_threshold_s,
        )

    @classmethod
    def forced(cls) -> Thresholds:
        return cls(0, 0, 0, 0, 0)

    def to_json(self) -> CoreParamsJson:
        return {
            "eval": self.eval_s,
            "batch_eval": self.batch_eval_s,
            "job": self.job_s,
            "node": self.node_s,
            "deployment": self.deployment_s,
        }

    @classmethod
    def from_params(cls, params: CoreParamsJson | None, defaults: Thresholds) -> Thresholds:
        """The thresholds a core evaluation carries; none (NULL core_params, e.g. one queued by
        hand) means the configured ones, never the forced zeros."""
        return defaults if params is None else cls.from_json(params)

    @classmethod
    def from_json(cls, data: CoreParamsJson) -> Thresholds:
        return cls(
            eval_s=float(data["eval"]),
            batch_eval_s=float(data["batch_eval"]),
            job_s=float(data["job"]),
            node_s=float(data["node"]),
            deployment_s=float(data["deployment"]),
        )
