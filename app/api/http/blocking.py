"""Blocking queries (?index=&wait=): one index watcher per process wakes every waiter.

A reader takes the tables' index and the data in one REPEATABLE READ snapshot. The index is
capped at the snapshot's safe index (app.db.state_index): every change at or below it is in
what it returned, and any change that commits later carries a higher index, so it wakes the
next call. Writers take no lock for their index and never wait for each other.

A node's query on its own allocations (every client holds one) is woken only by a change to
that node or its allocations, as Nomad's per-node watch is: the watcher asks once per change
which nodes moved, instead of every one of thousands of waiting clients re-reading the
database whenever any allocation anywhere changes. corral's client asks with ?client_since and
is woken by the servers' changes only (`servers_only`): not by the status reports it sent
itself, which move an allocation's modify_index but never its alloc_modify_index (Nomad's
client pulls by AllocModifyIndex the same way). Each report would otherwise cost its node a
wake-up, a read and an answer with nothing new in it: a third of a placement storm's work."""

from __future__ import annotations

import contextlib
import os
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from typing import TypeVar

import psycopg
import structlog
from sqlalchemy.orm import Session, sessionmaker

from app.api.http.hangups import NO_CALLER, Caller
from app.api.http.params import BlockingParams
from app.db.engines import connect_args, libpq_url
from app.db.state_index import GLOBAL, current_index, node_watch_indexes
from app.store.sql import psycopg_query

T = TypeVar("T")
log = structlog.get_logger(__name__)

POLL_INTERVAL_S = 0.25  # fallback when a NOTIFY is lost; notifications are only hints
JITTER_FRACTION = 16  # Nomad adds up to wait/16 so many watchers do not return together
NODE_TABLES = ("allocations", "nodes")
# A standby's watcher, told of a commit by the primary, looks again once replay has passed it
# (checked after REPLAY_STEP_S, then twice as long each time up to REPLAY_STEP_MAX_S, so a slow
# replay costs few queries); if that takes longer than its replay_wait_s, it is lagging.
REPLAY_STEP_S = 0.002
REPLAY_STEP_MAX_S = 0.05
NO_TURN = contextlib.nullcontext()  # a blocking read that waits for no share of its pool


class IndexWatcher:
    """Tracks the tables' indexes (each capped at the safe index) in the background; waiters
    sleep until their tables move."""

    def __init__(self, database_url: str, listen_url: str | None = None, replay_wait_s: float = 1.0) -> None:
        """`listen_url` (the primary) is given when `database_url` is a hot standby, which delivers
        no NOTIFY: the watcher listens on the primary and re-reads the standby once its replay
        has passed the primary's WAL position at the notification. A standby that has not done
        so within `replay_wait_s` is `lagging` (its waiters are woken to ask the primary) until
        it has."""
        self._url = libpq_url(database_url)
        self._listen_url = libpq_url(listen_url) if listen_url else None
        self._replay_wait_s = replay_wait_s
        self._safe = 0  # the watched server's safe index at its last look
        self.lagging = False
        self._lock = threading.Lock()
        self._indexes: dict[str, int] = {}
        self._waiters: set[threading.Event] = set()  # wait_beyond's, woken by any change
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._stopped = threading.Event()
        self._listening = False
        self.released = False  # shutting down: waiters answer with what they have
        # Per-node wake-ups, once a node's query has asked for them: the highest index of a
        # change to each node (or its allocations) seen since `_node_base`, the same for the
        # servers' changes only, and the events of the queries waiting on each node.
        self._tracking_nodes = False
        self._node_base: int | None = None
        self._node_level = 0
        self._node_marks: dict[uuid.UUID, int] = {}
        self._node_server_marks: dict[uuid.UUID, int] = {}
        self._node_waiters: dict[uuid.UUID, set[threading.Event]] = {}

    def safe_index(self) -> int:
        """The watched server's safe index at the watcher's last look (0 before the first); a
        hint only, as a pooled connection may reach another standby of a multi-host URL."""
        self._ensure_running()
        return self._safe

    def release_waiters(self) -> None:
        """Wake every waiting blocking query for good (the server is shutting down)."""
        with self._lock:
            self.released = True
            self._wake_all()

    def _wake_all(self) -> None:
        """Every waiter, per-node ones included (under self._lock)."""
        self._wake_table_waiters()
        self._wake_node_waiters()

    def _wake_table_waiters(self) -> None:
        """wait_beyond's waiters (under self._lock); a node's waiters wake for their node only."""
        for event in self._waiters:
            event.set()

    def _wake_node_waiters(self) -> None:
        """Every node's waiters (under self._lock)."""
        for events in self._node_waiters.values():
            for event in events:
                event.set()

    def stop(self) -> None:
        """End the background thread (used when an app or a test database goes away)."""
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def wait_beyond(self, tables: Iterable[str], index: int, deadline: float, gone: Caller = NO_CALLER) -> None:
        """Return once any of `tables` has an index above `index`, at the deadline, or once the
        caller hung up (app.api.http.hangups wakes the wait)."""
        self._ensure_running()
        names = list(tables)
        event = threading.Event()
        with self._lock:
            self._waiters.add(event)
        try:
            self._sleep(event, lambda: max((self._indexes.get(t, 0) for t in names), default=0) > index, deadline, gone)
        finally:
            with self._lock:
                self._waiters.discard(event)

    def wait_for_node(
        self,
        node: uuid.UUID,
        seen: int,
        snapshot_index: int,
        deadline: float,
        gone: Caller = NO_CALLER,
        servers_only: bool = False,
    ) -> None:
        """Return once `node` or one of its allocations changed past `seen` (`servers_only`: by a
        change of the servers', not a status its client reported), at the deadline, once the
        caller hung up, or when the caller must look again (its snapshot, taken at
        `snapshot_index`, predates what the watcher has tracked). Other nodes' changes never
        wake it."""
        self._ensure_running()
        self._tracking_nodes = True
        with self._lock:
            tracked = self._node_base is not None and self._node_base <= snapshot_index
        if not tracked:
            # Tracking starts with the watcher's next look; until then wake on any change.
            soon = min(deadline, time.monotonic() + POLL_INTERVAL_S * 2)
            self.wait_beyond(NODE_TABLES, snapshot_index, soon, gone)
            return
        event = threading.Event()
        with self._lock:
            self._node_waiters.setdefault(node, set()).add(event)

        marks = self._node_server_marks if servers_only else self._node_marks

        def moved() -> bool:
            if self._node_base is None or self._node_base > snapshot_index:
                return True  # the watcher reconnected and may have missed changes: look again
            return marks.get(node, 0) > seen

        try:
            self._sleep(event, moved, deadline, gone)
        finally:
            with self._lock:
                waiting = self._node_waiters.get(node)
                if waiting is not None:
                    waiting.discard(event)
                    if not waiting:
                        del self._node_waiters[node]

    def node_unmoved(self, node: uuid.UUID, seen: int, servers_only: bool = False) -> bool:
        """Whether the watcher alone can tell that `node` has not changed past `seen`: it has
        tracked every change to nodes and allocations since an index at or below `seen`, and none
        to this node went beyond it. A client's watch asked again with the index of its last
        answer then parks without a database read (any later change wakes it as it would have)."""
        if not self._tracking_nodes or self.released or not self._running():
            return False
        marks = self._node_server_marks if servers_only else self._node_marks
        with self._lock:
            base = self._node_base
            return base is not None and base <= seen and marks.get(node, 0) <= seen

    def _sleep(self, event: threading.Event, done: Callable[[], bool], deadline: float, gone: Caller) -> None:
        """Sleep on `event` (set by the watcher, a release or the hang-up monitor) until `done()`
        (asked under the lock), the deadline, or the caller's hang-up."""
        with gone.waking(event):
            while True:
                with self._lock:
                    if self.released or done():
                        return
                remaining = deadline - time.monotonic()
                if remaining <= 0 or gone():
                    return
                event.wait(remaining)
                event.clear()

    def _track_nodes(self, conn: psycopg.Connection[tuple[object, ...]], indexes: dict[str, int]) -> None:
        level = max(indexes.get(table, 0) for table in NODE_TABLES)
        if self._node_base is None:
            with self._lock:
                self._node_base = self._node_level = level
                # Tracking (re)starts here. After a lost connection, changes made while the
                # watcher was away were never tracked: every node's waiter looks again (its
                # snapshot predates the new base) rather than sleep through them until its wait
                # runs out (5 minutes for a client's watch).
                self._wake_node_waiters()
            return
        if level <= self._node_level:
            return
        # `level` is at or below the safe index, so every change up to it has finished and this
        # sees all of (previous level, level]; later ones come with the next range.
        rows = conn.execute(psycopg_query("node_changes_since"), {"since": self._node_level, "until": level}).fetchall()
        with self._lock:
            for node_id, index, server_index in rows:
                if node_id is None:
                    continue
                key = node_id if isinstance(node_id, uuid.UUID) else uuid.UUID(str(node_id))
                changed = int(str(index))
                if changed > self._node_marks.get(key, 0):
                    self._node_marks[key] = changed
                by_servers = int(str(server_index))
                if by_servers > self._node_server_marks.get(key, 0):
                    self._node_server_marks[key] = by_servers
                for event in self._node_waiters.get(key, ()):
                    event.set()  # each waiter asks whether the change is one it waits for
            self._node_level = level

    def _running(self) -> bool:
        # gunicorn forks after import: a thread started in the parent does not exist here.
        return self._thread is not None and self._thread.is_alive() and self._pid == os.getpid()

    def _ensure_running(self) -> None:
        if self._running():
            return
        with self._lock:
            if self._thread is None or not self._thread.is_alive() or self._pid != os.getpid():
                self._pid = os.getpid()
                self._thread = threading.Thread(target=self._run, name="index-watcher", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        lost = 0
        while not self._stopped.is_set():
            try:
                self._watch()
            except psycopg.Error as err:
                with self._lock:
                    self._node_base = None  # changes made while disconnected were not tracked
                if self._stopped.is_set():
                    return
                if self._listening:
                    lost, self._listening = 0, False
                if not lost:  # once per outage, not every second of it
                    log.warning("index watcher lost its connection; reconnecting", error=str(err))
                lost += 1
                self._stopped.wait(1.0)

    def _watch(self) -> None:
        kwargs = connect_args("api", "corral-api-index-watcher")
        with contextlib.ExitStack() as stack:
            conn = stack.enter_context(psycopg.connect(self._url, autocommit=True, **kwargs))
            listener = conn
            if self._listen_url is not None:
                listener = stack.enter_context(psycopg.connect(self._listen_url, autocommit=True, **kwargs))
            listener.execute("LISTEN corral_index")
            self._listening = True
            while not self._stopped.is_set():
                self._look(conn)
                for _ in listener.notifies(timeout=POLL_INTERVAL_S, stop_after=1):
                    pass
                if listener is not conn:  # after a NOTIFY, and on every poll (one missed while away)
                    self._set_lagging(not self._await_replay(listener, conn))

    def _look(self, conn: psycopg.Connection[tuple[object, ...]]) -> None:
        if self._listen_url is not None:  # only a standby's readers ask (app.api.http.replicas)
            safe = conn.execute(psycopg_query("safe_index")).fetchone()
            self._safe = int(str(safe[0])) if safe else 0
        rows = conn.execute(psycopg_query("read_all")).fetchall()
        indexes = {str(name): int(str(value)) for name, value in rows}
        indexes[GLOBAL] = max(indexes.values(), default=0)
        if self._tracking_nodes:
            self._track_nodes(conn, indexes)
        if indexes != self._indexes:
            # Only a change wakes the waiters: thousands of them must not all run
            # every poll interval for nothing.
            with self._lock:
                self._indexes = indexes
                self._wake_table_waiters()

    def _await_replay(
        self, primary: psycopg.Connection[tuple[object, ...]], standby: psycopg.Connection[tuple[object, ...]]
    ) -> bool:
        """Wait until the standby has replayed the primary's WAL as flushed now, which holds any
        commit already notified (the next look sees it). False if it has not within
        replay_wait_s."""
        row = primary.execute(psycopg_query("primary_wal_position")).fetchone()
        if row is None or row[0] is None:
            return True  # the "primary" is in recovery itself: nothing to compare with
        deadline = time.monotonic() + self._replay_wait_s
        step = REPLAY_STEP_S
        while not self._stopped.is_set():
            done = standby.execute(psycopg_query("replayed_past"), {"lsn": row[0]}).fetchone()
            if done is None or done[0] is not False:  # True, or not a standby (NULL): look now
                return True
            if time.monotonic() >= deadline:
                return False
            self._stopped.wait(step)
            step = min(step * 2, REPLAY_STEP_MAX_S)
        return True

    def _set_lagging(self, lagging: bool) -> None:
        if lagging == self.lagging:
            return
        if lagging:
            log.warning("standby replay lagging; its blocking queries go to the primary", wait_s=self._replay_wait_s)
        else:
            log.info("standby replay caught up")
        with self._lock:
            self.lagging = lagging
            if lagging:  # waiters on the standby look at `lagging` and go to the primary
                self._wake_all()


def blocking_read(
    factory: sessionmaker[Session],
    watcher: IndexWatcher,
    tables: list[str],
    params: BlockingParams,
    read: Callable[[Session], T],
    gone: Caller = NO_CALLER,
    node: uuid.UUID | None = None,
    turn: AbstractContextManager[object] = NO_TURN,
    servers_only: bool = False,
) -> tuple[T, int]:
    """Run `read` in a consistent snapshot once the tables' index passes params.index (or the
    wait ends, the server shuts down, or the caller hangs up). With `node`, only a change to
    that node or its allocations counts (the tables must be NODE_TABLES), and with
    `servers_only` only one the servers made (not a status the node's client reported). Each
    look at the database is taken inside `turn` (a semaphore sharing out the pool, or nothing)."""
    wait = params.wait_s + random.Random().uniform(0, params.wait_s / JITTER_FRACTION)
    deadline = time.monotonic() + wait
    seen = params.index
    if node is not None and seen is not None and watcher.node_unmoved(node, seen, servers_only) and not gone():
        # A client asking again with its last answer's index: nothing to read until its node
        # moves (half of what each wake of a fleet's watches cost was this re-asking's read).
        watcher.wait_for_node(node, seen, seen, deadline, gone, servers_only)
    while True:
        with turn, factory() as session, session.begin():
            seen = params.index
            if node is None:
                index = current_index(session, tables)
                moved = seen is None or index > seen
            else:
                looked = node_watch_indexes(session, tables, node)
                index = looked.tables_index
                node_at = looked.node_server_index if servers_only else looked.node_index
                moved = seen is None or node_at > seen
            if moved or watcher.released or time.monotonic() >= deadline or gone():
                return read(session), index
        assert seen is not None
        if node is None:
            watcher.wait_beyond(tables, seen, deadline, gone)
        else:
            watcher.wait_for_node(node, seen, index, deadline, gone, servers_only)
