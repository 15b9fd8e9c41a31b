"""A dependency's watcher: it asks again with the index it last saw, wakes the renderer only
for a changed answer, starts over when the index goes backwards, and retries failed queries."""

from __future__ import annotations

import threading

import pytest

from client.templating.source import VAR, Answer, Dependency, SourceError
from client.templating.watch import Cache
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit

DEP = Dependency(VAR, "nomad/jobs/web")


class ScriptedSource:
    """Answers from a script, then blocks until stopped; records the index of every query."""

    def __init__(self, script: list[Answer | Exception], stop: threading.Event) -> None:
        self.script, self.stop = script, stop
        self.indexes: list[int] = []

    def fetch(self, dependency: Dependency, index: int, wait_s: float) -> Answer:
        self.indexes.append(index)
        if not self.script:
            self.stop.wait()
            raise SourceError("stopped")
        step = self.script.pop(0)
        if isinstance(step, Exception):
            raise step
        return step


def test_watcher_follows_indexes_and_reports_changes_only() -> None:
    stop = threading.Event()
    script: list[Answer | Exception] = [
        Answer({"a": "1"}, 5),  # the first read
        Answer({"a": "1"}, 7),  # woke without a change
        Answer({"a": "2"}, 9),  # a change
        SourceError("unreachable"),  # retried with the same index
        Answer({"a": "2"}, 3),  # the index went backwards: start over from 0
        Answer({"a": "3"}, 4),
    ]
    source = ScriptedSource(script, stop)
    changes: list[Dependency] = []
    cache = Cache(source, changes.append, stop, wait_s=5)
    try:
        assert cache.variable("nomad/jobs/web") == {"a": "1"}
        assert wait_for(lambda: len(source.indexes) == 7, 20)
        assert source.indexes == [0, 5, 7, 9, 9, 0, 4]
        assert changes == [DEP, DEP]
        assert cache.variable("nomad/jobs/web") == {"a": "3"}
        assert cache.touched == {DEP}
    finally:
        stop.set()
        cache.join(5)
