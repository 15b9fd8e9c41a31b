"""CPU seconds spent by the processes of a benchmark run, per role: corral's own processes, and
the Postgres server with all its backends, including the ones that exited during the run."""

from __future__ import annotations

import os
from collections.abc import Iterable

import psutil
import psycopg

from app.db.engines import libpq_url


def process_cpu(pids: Iterable[int]) -> float:
    """User + system seconds of these processes so far (0 for one that is gone)."""
    total = 0.0
    for pid in pids:
        try:
            times = psutil.Process(pid).cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


class PostgresCpu:
    """The server's CPU: the postmaster, its live children, and the children it has reaped (a
    backend that exits mid-run moves its time from the live sum into the postmaster's
    children_user/children_system, so the total stays exact across the run). Only for a server
    on this machine: its postmaster is the parent of a backend's process."""

    def __init__(self, url: str) -> None:
        with psycopg.connect(libpq_url(url)) as conn:  # the backend is only there while connected
            row = conn.execute("SELECT pg_backend_pid()").fetchone()
            assert row is not None
            parent = psutil.Process(int(row[0])).parent()
        assert parent is not None
        self._postmaster = parent

    def seconds(self) -> float:
        own = self._postmaster.cpu_times()
        total = own.user + own.system + own.children_user + own.children_system
        return total + process_cpu(child.pid for child in self._postmaster.children())


def load_average() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())
