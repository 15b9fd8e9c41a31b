"""The data a task's templates read, kept fresh by one blocking-query watcher per
dependency: a watcher asks its Source with the last index it saw, so it waits on the
servers (not on a timer) and wakes the renderer only when the answer changed."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import structlog

from client.template.values import Service, ServiceSnippet, VarMeta
from client.templating.source import SERVICE, SERVICES, VAR, VARS, Dependency, Source, SourceError, Value

log = structlog.get_logger(__name__)
# consul-template's minimum gap between two queries of one watcher: a server that answers a
# blocking query at once with nothing new (an index that does not move) is not hammered. An
# answer that brought a change is followed by the next query at once (it blocks: the index moved).
MIN_QUERY_GAP_S = 0.1
RETRY_BASE_S = 0.25
RETRY_MAX_S = 60.0


class Cache:
    """Implements the template engine's Data over watched dependencies. `touched` collects
    what one render read (the manager resets it before each render)."""

    def __init__(
        self, source: Source, on_change: Callable[[Dependency], None], stop: threading.Event, wait_s: float
    ) -> None:
        self.source, self.on_change, self.stop, self.wait_s = source, on_change, stop, wait_s
        self._values: dict[Dependency, Value] = {}
        self._indexes: dict[Dependency, int] = {}
        self._threads: dict[Dependency, threading.Thread] = {}
        self._lock = threading.Lock()
        self.touched: set[Dependency] = set()

    def get(self, dependency: Dependency) -> Value:
        """The cached answer; on the first read, asked at once (SourceError propagates) and
        watched from then on."""
        self.touched.add(dependency)
        with self._lock:
            if dependency in self._values:
                return self._values[dependency]
        answer = self.source.fetch(dependency, 0, self.wait_s)
        with self._lock:
            if dependency not in self._values:
                self._values[dependency], self._indexes[dependency] = answer.value, answer.index
                thread = threading.Thread(
                    target=self._watch, args=(dependency,), name=f"tmpl-{dependency}", daemon=True
                )
                self._threads[dependency] = thread
                thread.start()
            return self._values[dependency]

    def _watch(self, dependency: Dependency) -> None:
        index, delay = self._indexes[dependency], RETRY_BASE_S
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                answer = self.source.fetch(dependency, index, self.wait_s)
            except SourceError as err:
                log.warning("template dependency query failed", dependency=str(dependency), error=str(err))
                if self.stop.wait(delay):
                    return
                delay = min(delay * 2, RETRY_MAX_S)
                continue
            except Exception:  # a bug must not end the watch silently: log it and retry
                log.exception("template dependency watcher failed", dependency=str(dependency))
                if self.stop.wait(RETRY_MAX_S):
                    return
                continue
            delay = RETRY_BASE_S
            # An index that goes backwards (servers restored, another cluster) restarts the watch.
            index = answer.index if answer.index >= index else 0
            with self._lock:
                changed = self._values.get(dependency) != answer.value
                self._values[dependency] = answer.value
            if changed and not self.stop.is_set():
                self.on_change(dependency)
            gap = MIN_QUERY_GAP_S - (time.monotonic() - started)
            if not changed and gap > 0 and self.stop.wait(gap):
                return

    def join(self, timeout_s: float) -> None:
        for thread in list(self._threads.values()):
            thread.join(timeout_s)

    # The template engine's Data protocol.
    def variable(self, path: str) -> dict[str, str] | None:
        value = self.get(Dependency(VAR, path))
        return value if isinstance(value, dict) else None

    def variables(self, prefix: str) -> list[VarMeta]:
        return [v for v in self.get(Dependency(VARS, prefix)) or [] if isinstance(v, VarMeta)]

    def service(self, name: str) -> list[Service]:
        return [s for s in self.get(Dependency(SERVICE, name)) or [] if isinstance(s, Service)]

    def services(self) -> list[ServiceSnippet]:
        return [s for s in self.get(Dependency(SERVICES)) or [] if isinstance(s, ServiceSnippet)]
