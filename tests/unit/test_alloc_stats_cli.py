"""`alloc status -stats` and `alloc fs` print sizes as Nomad does (go-humanize's IBytes) and only
the figures the client measured."""

from __future__ import annotations

from typing import Any

import pytest

from app.cli.allocs.alloc_stats import ibytes, task_resources

pytestmark = pytest.mark.unit


def test_sizes_read_as_nomads() -> None:
    assert [ibytes(n) for n in (0, 9, 512, 4096, 12_345, 5 * 1024 * 1024)] == [
        "0 B", "9 B", "512 B", "4.0 KiB", "12 KiB", "5.0 MiB",
    ]  # fmt: skip


def test_task_resources_show_use_against_the_ask_and_only_measured_stats() -> None:
    usage: Any = {
        "MemoryStats": {"RSS": 3 * 1024 * 1024, "Swap": 0, "Cache": 99, "Measured": ["Swap", "RSS"]},
        "CpuStats": {
            "Percent": 12.5,
            "UserMode": 10.0,
            "SystemMode": 2.5,
            "TotalTicks": 250.7,
            "Measured": ["Percent"],
        },
    }
    lines = task_resources({"CPU": 100, "MemoryMB": 10}, usage)
    assert lines[:3] == ["Task Resources:", "CPU          Memory", "250/100 MHz  3.0 MiB/10 MiB"]
    assert lines[4:7] == ["Memory Stats", "RSS      Swap", "3.0 MiB  0 B"]
    assert lines[8:] == ["CPU Stats", "Percent", "12.50%"]
    assert "Memory Stats" not in task_resources({"CPU": 100, "MemoryMB": 10}, None)
