"""corral's own /v1/system/gc/runs: one garbage collection run as the API lists it and
`corral system gc-runs` prints it."""

from __future__ import annotations

from typing import TypedDict


class GcRunJson(TypedDict):
    ID: int
    Kind: str  # eval-gc, job-gc, node-gc, deployment-gc or force-gc
    Status: str  # running, complete, failed or interrupted
    EvalID: str | None
    Removed: dict[str, int]  # table -> rows removed
    RowsRemoved: int
    Batches: int
    LongestBatchMs: int
    Timeouts: int
    Thresholds: dict[str, int]
    Worker: str
    Error: str | None
    StartedAt: str  # ISO 8601
    FinishedAt: str | None
    DurationMs: int | None
