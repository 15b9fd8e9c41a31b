"""Nomad service checks, the pure part: each check's definition as the client runs it, its
Nomad check ID, the status machine (`success_before_passing`, `failures_before_critical`), the
`check_restart` counter, and the result shape of /v1/client/allocation/<id>/checks.

Statuses are Nomad's for its own provider: pending until a verdict, then success or failure
(there is no warning: `on_update = "ignore_warnings"` behaves as "require_healthy"). A check
whose `on_update` is "ignore" is a readiness check: reported, never judged for deployment
health."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

NANOS = 1_000_000_000
SUCCESS, FAILURE, PENDING = "success", "failure", "pending"
HEALTHINESS, READINESS = "healthiness", "readiness"
OUTPUT_LIMIT = 4096  # bytes of a probe's output kept in the result (Consul keeps 4 KiB too)


@dataclass(frozen=True)
class CheckSpec:
    """One check, resolved for this allocation: what to probe and how to judge it."""

    id: str
    name: str
    kind: str  # http, tcp, script
    group: str
    task: str  # the check's task ("" for a group service's http/tcp check)
    service: str
    address: str
    port: int
    interval_s: float
    timeout_s: float
    path: str = "/"
    method: str = "GET"
    protocol: str = "http"
    headers: tuple[tuple[str, str], ...] = ()
    command: str = ""
    args: tuple[str, ...] = ()
    success_before_passing: int = 0
    failures_before_critical: int = 0
    on_update: str = "require_healthy"
    restart_limit: int = 0
    restart_grace_s: float = 1.0

    @property
    def mode(self) -> str:
        return READINESS if self.on_update == "ignore" else HEALTHINESS


def check_id(alloc_id: str, group: str, check: Mapping[str, Any]) -> str:
    """Nomad's NomadCheckID: a SHA-256 over the allocation, group and the check's identity."""
    digest = hashlib.sha256()
    for key in ("TaskName", "Name", "Type", "PortLabel", "OnUpdate", "AddressMode"):
        if key == "TaskName":
            digest.update(alloc_id.encode())
            digest.update(group.encode())
        digest.update(str(check.get(key) or "").encode())
    for key in ("Interval", "Timeout"):
        digest.update(int(check.get(key) or 0).to_bytes(8, "little", signed=True))
    for key in ("Protocol", "Path", "Method"):
        digest.update(str(check.get(key) or "").encode())
    digest.update(b"true" if check.get("TLSSkipVerify") else b"false")
    return digest.hexdigest()


def spec_of(
    alloc_id: str, group: str, service: str, service_task: str, address: str, port: int, check: Mapping[str, Any]
) -> CheckSpec:
    """A check of a service (`service_task` "" for a group service) on the service's address
    and port, or on its own port when it names one (resolved by the caller into `port`)."""
    restart = check.get("CheckRestart") or {}
    headers = tuple(
        (str(name), str(value)) for name, values in (check.get("Header") or {}).items() for value in values or []
    )
    return CheckSpec(
        id=check_id(alloc_id, group, check),
        name=str(check.get("Name") or f'service: "{service}" check'),
        kind=str(check.get("Type") or "").lower(),
        group=group,
        task=str(check.get("TaskName") or service_task),
        service=service,
        address=address,
        port=port,
        interval_s=max(float(check.get("Interval") or NANOS) / NANOS, 1.0),
        timeout_s=max(float(check.get("Timeout") or NANOS) / NANOS, 1.0),
        path=str(check.get("Path") or "/"),
        method=str(check.get("Method") or "GET").upper(),
        protocol=str(check.get("Protocol") or "http"),
        headers=headers,
        command=str(check.get("Command") or ""),
        args=tuple(str(a) for a in check.get("Args") or []),
        success_before_passing=int(check.get("SuccessBeforePassing") or 0),
        failures_before_critical=int(check.get("FailuresBeforeCritical") or 0),
        on_update=str(check.get("OnUpdate") or "require_healthy"),
        restart_limit=int(restart.get("Limit") or 0),
        restart_grace_s=float(restart.get("Grace", NANOS) or 0) / NANOS,
    )


@dataclass(frozen=True)
class Probe:
    """One probe's outcome: passed or not, its output, and the HTTP status if any."""

    ok: bool
    output: str
    status_code: int = 0


@dataclass
class CheckState:
    """The status machine of one check. A status changes only after enough probes in a row
    agree: `success_before_passing` successes (at least one) to pass, `failures_before_critical`
    failures (at least one) to fail; until then the previous status stands."""

    spec: CheckSpec
    status: str = PENDING
    successes: int = 0
    failures: int = 0
    output: str = ""
    status_code: int = 0
    timestamp: int = 0
    passing_since: float | None = None

    def observe(self, probe: Probe, now: float) -> str:
        """Record a probe; returns the status after it."""
        self.output, self.status_code, self.timestamp = probe.output[:OUTPUT_LIMIT], probe.status_code, int(now)
        if probe.ok:
            self.successes, self.failures = self.successes + 1, 0
            if self.status != SUCCESS and self.successes >= max(1, self.spec.success_before_passing):
                self.status, self.passing_since = SUCCESS, now
        else:
            self.failures, self.successes = self.failures + 1, 0
            if self.status != FAILURE and self.failures >= max(1, self.spec.failures_before_critical):
                self.status, self.passing_since = FAILURE, None
        return self.status

    def result(self) -> dict[str, Any]:
        """Nomad's CheckQueryResult."""
        body: dict[str, Any] = {
            "ID": self.spec.id,
            "Mode": self.spec.mode,
            "Status": self.status,
            "Output": self.output,
            "Timestamp": self.timestamp,
            "Group": self.spec.group,
            "Service": self.spec.service,
            "Check": self.spec.name,
        }
        if self.status_code:
            body["StatusCode"] = self.status_code
        if self.spec.task:
            body["Task"] = self.spec.task
        return body


@dataclass
class RestartCounter:
    """`check_restart`: `limit` failing results in a row (after the grace that follows each
    start of the task) restart it; any other result starts the count again. Limit 0: never."""

    limit: int
    grace_s: float
    grace_until: float = 0.0
    failures: int = field(default=0)

    def started(self, now: float) -> None:
        """The task (re)started: failures within the grace do not count."""
        self.grace_until, self.failures = now + self.grace_s, 0

    def observe(self, status: str, now: float) -> bool:
        """Whether this result is the one that restarts the task."""
        if self.limit <= 0:
            return False
        if status != FAILURE:
            self.failures = 0
            return False
        if now < self.grace_until:
            return False
        self.failures += 1
        if self.failures < self.limit:
            return False
        self.started(now)
        return True


def all_passing(states: list[CheckState]) -> tuple[bool, float]:
    """Whether every healthiness check passes, and since when (the latest to pass); True and
    0.0 when there is none to judge."""
    judged = [s for s in states if s.spec.mode == HEALTHINESS]
    if any(s.status != SUCCESS or s.passing_since is None for s in judged):
        return False, 0.0
    return True, max((s.passing_since or 0.0 for s in judged), default=0.0)
