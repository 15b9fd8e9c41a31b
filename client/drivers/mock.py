"""`mock`: a deterministic, in-process task for tests and simulations (no process at all)."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

from client.drivers.base import DEFAULT_KILL_SIGNAL, KILLED, Handle, StartError, TaskSpec, log_paths, open_log, seconds


class MockHandle:
    """Runs for `run_for` (forever if unset) and exits with `exit_code`; once killed it takes
    `kill_after` to exit. Times are wall-clock so a restarted client resumes the same schedule."""

    def __init__(self, started: float, run_for_s: float | None, exit_code: int, kill_after_s: float) -> None:
        self.started, self.run_for_s, self.exit_code, self.kill_after_s = started, run_for_s, exit_code, kill_after_s
        self._killed = threading.Event()
        self._killed_at = 0.0

    def state(self) -> dict[str, Any]:
        return {
            "started": self.started,
            "run_for_s": self.run_for_s,
            "exit_code": self.exit_code,
            "kill_after_s": self.kill_after_s,
        }

    def _ends_at(self) -> float:
        natural = float("inf") if self.run_for_s is None else self.started + self.run_for_s
        return min(natural, self._killed_at + self.kill_after_s) if self._killed.is_set() else natural

    def wait(self, timeout_s: float) -> int | None:
        deadline = time.time() + timeout_s
        while True:
            now, ends = time.time(), self._ends_at()
            if now >= ends:
                return self._code(ends)
            if now >= deadline:
                return None
            pause = min(ends, deadline) - now
            if self._killed.is_set():
                time.sleep(pause)
            else:
                self._killed.wait(pause)  # a kill wakes it early: the end moves

    def _code(self, ended: float) -> int:
        natural = float("inf") if self.run_for_s is None else self.started + self.run_for_s
        return KILLED if ended < natural else self.exit_code

    def kill(self, timeout_s: float, signal_name: str = DEFAULT_KILL_SIGNAL) -> int:
        if not self._killed.is_set():
            self._killed_at = time.time()
            self._killed.set()
        code = self.wait(timeout_s)
        return KILLED if code is None else code

    def pids(self) -> list[int]:
        return []

    def signal(self, signum: int) -> None:
        """The mock task has no process: a signal reaches nothing, as it would a task ignoring it."""


class Mock:
    name = "mock"

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle:
        config = task.config
        if config.get("start_error"):
            raise StartError(str(config["start_error"]))
        run_for = seconds(config["run_for"], "run_for") if "run_for" in config else None
        kill_after = seconds(config.get("kill_after", 0), "kill_after")
        exit_code = config.get("exit_code", 0)
        if isinstance(exit_code, bool) or not isinstance(exit_code, int):
            raise StartError("config.exit_code must be an integer")
        with open_log(log_paths(task, logs)[0]) as out:
            out.write(f"mock task {task.name} started\n".encode())
        return MockHandle(time.time(), run_for, exit_code, kill_after)

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None:
        try:
            run_for = saved["run_for_s"]
            return MockHandle(
                float(saved["started"]),
                None if run_for is None else float(run_for),
                int(saved["exit_code"]),
                float(saved["kill_after_s"]),
            )
        except (KeyError, TypeError, ValueError):
            return None
