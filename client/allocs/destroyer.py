"""Allocation destroys on a fixed number of slots (Nomad's `gc_parallel_destroys`).

A destroy can hang (a task that ignores SIGKILL in uninterruptible sleep, a directory on a dead
mount). Each destroy runs on one of `slots` daemon threads, so a hung one holds only its own
slot: the others keep working through the queue, an allocation already queued or in flight is
never queued twice, and nobody has to wait for it (the threads are daemons, so it does not hold
up the client's exit either). A failed destroy is logged with the allocation's id and the error;
the allocation stays with the client, so a later GC run tries again."""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Generic, Protocol, TypeVar

import structlog

log = structlog.get_logger(__name__)


class Destroyable(Protocol):
    @property
    def id(self) -> str: ...


R = TypeVar("R", bound=Destroyable)


class Destroyer(Generic[R]):
    def __init__(self, slots: int, destroy: Callable[[R], None]) -> None:
        self._slots, self._destroy = slots, destroy
        self._queue: queue.Queue[tuple[R, str]] = queue.Queue()
        self._pending: dict[str, threading.Event] = {}
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []

    def submit(self, runner: R, reason: str) -> threading.Event | None:
        """Queue a destroy; the event is set when it has finished (done or failed). None when
        this allocation is already queued or being destroyed: it is not queued again."""
        with self._lock:
            if runner.id in self._pending:
                return None
            done = self._pending[runner.id] = threading.Event()
            self._start_slots()
        log.info("destroying allocation", alloc_id=runner.id, reason=reason)
        self._queue.put((runner, reason))
        return done

    def pending(self) -> set[str]:
        """Allocations queued or being destroyed."""
        with self._lock:
            return set(self._pending)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for the destroys pending now; False if some are still running after `timeout` seconds."""
        with self._lock:
            events = list(self._pending.values())
        return finished(events, timeout)

    def _start_slots(self) -> None:
        while len(self._threads) < self._slots:
            thread = threading.Thread(target=self._work, name=f"gc-destroy-{len(self._threads)}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def _work(self) -> None:
        while True:
            runner, reason = self._queue.get()
            try:
                self._destroy(runner)
            except Exception as err:  # any failure is logged: the slot must survive it
                log.error("destroying allocation failed", alloc_id=runner.id, reason=reason, error=repr(err))
            finally:
                with self._lock:
                    done = self._pending.pop(runner.id)
                done.set()


def finished(events: list[threading.Event], timeout: float | None) -> bool:
    """Whether every event is set within `timeout` seconds in all (None: however long it takes)."""
    deadline = None if timeout is None else time.monotonic() + timeout

    def left() -> float | None:
        return None if deadline is None else max(0.0, deadline - time.monotonic())

    return all(event.wait(left()) for event in events)
