"""GET /v1/operator/scheduler/configuration: Nomad's SchedulerConfiguration as corral keeps it."""

from __future__ import annotations

from typing import TypedDict


class PreemptionConfigJson(TypedDict):
    SystemSchedulerEnabled: bool
    SysBatchSchedulerEnabled: bool
    BatchSchedulerEnabled: bool
    ServiceSchedulerEnabled: bool


class SchedulerConfigJson(TypedDict):
    SchedulerAlgorithm: str  # binpack or spread
    PreemptionConfig: PreemptionConfigJson
    MemoryOversubscriptionEnabled: bool
    RejectJobRegistration: bool
    PauseEvalBroker: bool
    CreateIndex: int
    ModifyIndex: int
