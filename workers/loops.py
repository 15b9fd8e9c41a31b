"""What keeps every long-running loop of every role alive: capped, jittered backoff, and a
guard that logs an unexpected failure once (with its traceback and the loop's name), backs
off, and carries on, so no thread dies silently. A loop that must not carry on after a
failure says so by raising `Fatal`; the process then exits non-zero for its supervisor."""

from __future__ import annotations

import os
import random
import threading
from collections.abc import Callable
from typing import Any

import structlog

log = structlog.get_logger(__name__)
FATAL_EXIT_CODE = 70  # EX_SOFTWARE


class Fatal(Exception):
    """A failure the loop cannot carry on from: the whole process exits non-zero."""


class Backoff:
    """Exponential from `base` up to `cap` seconds, each delay jittered to between half and all
    of its nominal value so that a crowd of processes does not retry in step."""

    def __init__(self, base: float = 0.5, cap: float = 15.0, rng: random.Random | None = None) -> None:
        self.base, self.cap = base, cap
        self._nominal = base
        self._random = rng or random.Random()

    def next(self) -> float:
        delay = self._nominal * (0.5 + 0.5 * self._random.random())
        self._nominal = min(self._nominal * 2, self.cap)
        return delay

    def reset(self) -> None:
        self._nominal = self.base


class Streak:
    """Logs the first failure of a run of failures, stays quiet while the same failure repeats,
    and logs once more when things work again: one clear line per outage, not one per retry."""

    def __init__(self, what: str, **context: Any) -> None:
        self.what, self.context = what, context
        self.failures = 0
        self._last = ""

    def failed(self, err: BaseException, *, traceback: bool = False) -> None:
        self.failures += 1
        summary = f"{type(err).__name__}: {str(err).splitlines()[0] if str(err) else ''}"
        if summary == self._last:
            return
        self._last = summary
        fields = {**self.context, "error": summary, "failures": self.failures}
        if traceback:
            log.error(f"{self.what} failed unexpectedly; backing off and carrying on", exc_info=err, **fields)
        else:
            log.warning(f"{self.what} failed; retrying with backoff", **fields)

    def succeeded(self) -> None:
        if self.failures:
            log.info(f"{self.what} works again", failures=self.failures, **self.context)
        self.failures, self._last = 0, ""


def exit_fatally(name: str, err: BaseException) -> None:
    """Exit the whole process at once: a supervisor restarts it; a thread dying alone would not be noticed."""
    log.critical("loop cannot carry on; exiting the process", loop=name, error=repr(err), exc_info=err)
    os._exit(FATAL_EXIT_CODE)


def guarded(
    name: str,
    step: Callable[[], float | None],
    stop: threading.Event,
    backoff: Backoff | None = None,
    on_fatal: Callable[[str, BaseException], None] = exit_fatally,
) -> None:
    """Run `step` until `stop` is set. `step` returns how long to wait before the next round
    (None: go again at once). An exception from it is logged (once per streak), the loop backs
    off and goes on; `Fatal` (or anything that is not an Exception) ends the process."""
    backoff = backoff or Backoff()
    streak = Streak(f"loop {name!r}", loop=name)
    while not stop.is_set():
        try:
            wait = step()
        except Fatal as err:
            on_fatal(name, err)
            return
        except Exception as err:
            streak.failed(err, traceback=True)
            stop.wait(backoff.next())
            continue
        except BaseException as err:  # SystemExit, KeyboardInterrupt in a thread: do not linger half-alive
            on_fatal(name, err)
            raise
        streak.succeeded()
        backoff.reset()
        if wait:
            stop.wait(wait)
