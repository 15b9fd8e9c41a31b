"""Bodies of the client allocation writes as the CLI sends them (restart and signal), and an
allocation as the API's lists send it."""

from __future__ import annotations

from typing import TypedDict

from app.wire.allocation import AllocationJson


class AllocRestartRequest(TypedDict):
    """Nomad's AllocRestartRequest: one task ("" for the running ones) or AllTasks."""

    TaskName: str
    AllTasks: bool


class AllocSignalRequest(TypedDict):
    Task: str  # "" for every task
    Signal: str


class AllocationListedJson(AllocationJson, total=False):
    """An allocation in a list: Nomad's AllocListStub keys, and the rest of the Allocation but
    its Job and Metrics (app.api.encoders.encode.allocation_listed says why)."""

    JobType: str
    JobVersion: int
