"""The task restart policy inside an allocation (Nomad's restart block): up to `attempts`
restarts per `interval`, `delay` apart; then `fail`, or with mode `delay` wait out the interval."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NANOS = 1e9


@dataclass(frozen=True)
class RestartPolicy:
    attempts: int = 2
    interval_s: float = 1800.0
    delay_s: float = 15.0
    mode: str = "fail"

    @classmethod
    def of(cls, spec: dict[str, Any] | None) -> RestartPolicy:
        """From the job's JSON (durations in nanoseconds); missing fields keep Nomad's service defaults."""
        spec = spec or {}
        default = cls()
        return cls(
            attempts=int(spec.get("Attempts", default.attempts)),
            interval_s=float(spec.get("Interval", default.interval_s * NANOS)) / NANOS,
            delay_s=float(spec.get("Delay", default.delay_s * NANOS)) / NANOS,
            mode=str(spec.get("Mode", default.mode)),
        )


@dataclass(frozen=True)
class Decision:
    action: str  # "complete", "fail" or "restart"
    delay_s: float = 0.0
    reason: str = ""


class RestartTracker:
    """Decides what follows each exit. With `batch` (a batch task, or a non-sidecar lifecycle
    hook or poststop task: see lifecycle.restarts_on_success) an exit 0 is done; any other exit
    (a service task's too: it is meant to run forever) is a restart while the policy allows."""

    def __init__(self, policy: RestartPolicy, batch: bool) -> None:
        self.policy, self.batch = policy, batch
        self.count = 0
        self.interval_start: float | None = None

    def after_exit(self, now: float, exit_code: int, start_failed: bool = False) -> Decision:
        if self.batch and exit_code == 0 and not start_failed:
            return Decision("complete", reason="Exit status 0")
        if self.interval_start is None or now - self.interval_start > self.policy.interval_s:
            self.interval_start, self.count = now, 0
        self.count += 1
        if self.count <= self.policy.attempts:
            return Decision("restart", self.policy.delay_s, "Restart within policy")
        if self.policy.mode == "delay":
            wait = max(self.policy.delay_s, self.interval_start + self.policy.interval_s - now)
            self.interval_start, self.count = None, 0
            return Decision("restart", wait, "Exceeded allowed attempts, applying a delay")
        return Decision(
            "fail",
            reason=f"Exceeded allowed attempts {self.policy.attempts} in interval "
            f'{self.policy.interval_s:g}s and mode is "fail"',
        )
