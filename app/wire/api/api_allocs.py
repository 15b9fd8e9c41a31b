"""Bodies of the client allocation writes as the CLI sends them: restart and signal."""

from __future__ import annotations

from typing import TypedDict


class AllocRestartRequest(TypedDict):
    """Nomad's AllocRestartRequest: one task ("" for the running ones) or AllTasks."""

    TaskName: str
    AllTasks: bool


class AllocSignalRequest(TypedDict):
    Task: str  # "" for every task
    Signal: str
