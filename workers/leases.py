"""The worker's leases on its evaluations, kept alive while it works on them."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

import structlog
from sqlalchemy import Engine

from app.pipeline import broker
from app.pipeline.broker import Claim

log = structlog.get_logger(__name__)


@dataclass(eq=False)
class Lease:
    """One claim the renewer keeps alive; `lost` is set when a renewal finds it taken over."""

    held: Claim
    lost: threading.Event = field(default_factory=threading.Event)


class Leases:
    """Renews every claim of this process, each every third of the lease, from one thread that
    lives as long as the worker (not a thread started and joined per evaluation)."""

    def __init__(self, engine: Engine, lease_s: float) -> None:
        self._engine, self._lease_s = engine, lease_s
        self._due: dict[Lease, float] = {}
        self._changed = threading.Condition()
        self._closed = False
        self._thread: threading.Thread | None = None

    def hold(self, held: Claim) -> Lease:
        lease = Lease(held)
        with self._changed:
            if self._thread is None:  # started at the first claim: a worker never idle-renews
                self._thread = threading.Thread(target=self._run, name="lease-renewer", daemon=True)
                self._thread.start()
            idle = not self._due
            self._due[lease] = time.monotonic() + self._lease_s / 3
            if idle:  # else the renewer already waits for an earlier lease, due no later than this one
                self._changed.notify()
        return lease

    def release(self, lease: Lease) -> None:
        with self._changed:
            self._due.pop(lease, None)

    def close(self) -> None:
        with self._changed:
            self._closed = True
            self._changed.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _run(self) -> None:
        while (due := self._next_due()) is not None:
            for lease in due:
                self._renew(lease)

    def _next_due(self) -> list[Lease] | None:
        """The leases to renew now (rescheduled a third of a lease on), or None once closed."""
        with self._changed:
            while not self._closed:
                now = time.monotonic()
                due = [lease for lease, at in self._due.items() if at <= now]
                if due:
                    for lease in due:
                        self._due[lease] = now + self._lease_s / 3
                    return due
                soonest = min(self._due.values(), default=None)
                self._changed.wait(None if soonest is None else soonest - now)
            return None

    def _renew(self, lease: Lease) -> None:
        try:
            if not broker.renew(self._engine, lease.held, self._lease_s):
                lease.lost.set()
                self.release(lease)
        except Exception:  # a blip: the next renewal may succeed before the lease lapses
            log.warning("lease renewal failed", eval_id=str(lease.held.evaluation.id))
