"""Test databases cloned from the migrated template on a thread of their own.

Cloning a database and dropping one are the fixed cost of every integration test, and most of it
is the server's disk work (CREATE DATABASE writes every page of the template; DROP DATABASE waits
for a checkpoint), which the test itself need not wait for: the next clone is made while the
current test runs, and a finished test's database is dropped while the next one runs. The test
sees the same thing as before: a database of its own, a clone of the template nobody else has
touched."""

from __future__ import annotations

import threading
import uuid

import psycopg
from psycopg import sql


class DatabaseSupply:
    """Keeps one fresh clone of TEMPLATE ready on ADMIN_URL's server and drops returned ones."""

    def __init__(self, admin_url: str, template: str, prefix: str = "corral_test_") -> None:
        self._admin_url, self._template, self._prefix = admin_url, template, prefix
        self._changed = threading.Condition()
        self._ready: str | None = None
        self._drops: list[str] = []
        self._failure: BaseException | None = None
        self._closing = False
        self._thread = threading.Thread(target=self._run, name="test-database-supply", daemon=True)
        self._thread.start()

    def take(self) -> str:
        """The name of a fresh clone, the caller's alone; it is handed back with `drop`."""
        with self._changed:
            while self._ready is None and self._failure is None:
                self._changed.wait()
            if self._ready is None:
                raise RuntimeError("making or dropping a test database failed") from self._failure
            name, self._ready = self._ready, None
            self._changed.notify_all()
            return name

    def drop(self, name: str) -> None:
        """Drop NAME (connections still open to it are cut), soon rather than now."""
        with self._changed:
            self._drops.append(name)
            self._changed.notify_all()

    def close(self) -> None:
        """Drop every database handed back and the unused clone; raises the first failure."""
        with self._changed:
            self._closing = True
            self._changed.notify_all()
        self._thread.join()
        if self._ready is not None:
            self._drop_now(self._ready)
        if self._failure is not None:
            raise RuntimeError("making or dropping a test database failed") from self._failure

    def _run(self) -> None:
        while True:
            with self._changed:
                while not self._closing and not self._drops and (self._ready is not None or self._failure):
                    self._changed.wait()
                # A clone first: a test may be waiting for it; a drop never holds anyone up.
                clone = self._ready is None and self._failure is None and not self._closing
                if not clone and not self._drops:
                    return
                name = self._fresh_name() if clone else self._drops.pop(0)
            try:
                self._clone_now(name) if clone else self._drop_now(name)
            except BaseException as err:  # kept for take()/close() to raise in the test's thread
                with self._changed:
                    self._failure = self._failure or err
                    self._changed.notify_all()
                continue
            if clone:
                with self._changed:
                    self._ready = name
                    self._changed.notify_all()

    def _fresh_name(self) -> str:
        return f"{self._prefix}{uuid.uuid4().hex[:12]}"

    def _clone_now(self, name: str) -> None:
        with psycopg.connect(self._admin_url, autocommit=True) as conn:
            conn.execute(
                sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(sql.Identifier(name), sql.Identifier(self._template))
            )

    def _drop_now(self, name: str) -> None:
        with psycopg.connect(self._admin_url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
