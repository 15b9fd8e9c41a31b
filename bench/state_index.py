"""How the way a write takes its state index limits concurrent writers. Each writer runs small
write transactions (the index, two row inserts, a synchronous commit: about the shape of a job
registration) in a loop, with 1 and then `writers` connections, for each way of taking it:

- lock-first: bump one counter row as the first write (corral before revision 0015),
- lock-last: the same bump as the last statement before COMMIT (the lock is held only for it
  and the commit's WAL flush),
- xid-log: the transaction's own ID logged by a plain INSERT (corral since 0015: no lock).

Prints commits/s per mode and the speed-up from 1 to `writers` connections.

Usage: uv run python -m bench.state_index [seconds] [writers]
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable

import psycopg

from app.db.engines import libpq_url
from bench.common import bench_database

Conn = psycopg.Connection[tuple[object, ...]]
SETUP = (
    "CREATE TABLE bench_counter (name text PRIMARY KEY, value bigint NOT NULL)",
    "INSERT INTO bench_counter VALUES ('_global', 0)",
    "CREATE TABLE bench_rows (id bigserial PRIMARY KEY, index bigint NOT NULL, payload text NOT NULL)",
)
BUMP = "UPDATE bench_counter SET value = value + 1 WHERE name = '_global' RETURNING value"
LOG = "INSERT INTO state_index (name, value) VALUES ('jobs', state_index_own()) RETURNING value"
ROW = "INSERT INTO bench_rows (index, payload) VALUES (%s, repeat('x', 200))"


def lock_first(conn: Conn) -> None:
    with conn.transaction():
        index = _scalar(conn, BUMP)
        conn.execute(ROW, (index,))
        conn.execute(ROW, (index,))


def lock_last(conn: Conn) -> None:
    with conn.transaction():
        conn.execute(ROW, (0,))
        conn.execute(ROW, (0,))
        _scalar(conn, BUMP)


def xid_log(conn: Conn) -> None:
    with conn.transaction():
        index = _scalar(conn, LOG)
        conn.execute(ROW, (index,))
        conn.execute(ROW, (index,))


MODES: dict[str, Callable[[Conn], None]] = {"lock-first": lock_first, "lock-last": lock_last, "xid-log": xid_log}


def _scalar(conn: Conn, statement: str) -> object:
    row = conn.execute(statement).fetchone()
    assert row is not None
    return row[0]


def rate(url: str, write: Callable[[Conn], None], writers: int, seconds: float) -> float:
    stop = threading.Event()
    counts = [0] * writers

    def loop(slot: int) -> None:
        with psycopg.connect(url, autocommit=True) as conn:
            while not stop.is_set():
                write(conn)
                counts[slot] += 1

    threads = [threading.Thread(target=loop, args=(i,)) for i in range(writers)]
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join()
    return sum(counts) / seconds


def main(seconds: float, writers: int) -> None:
    with bench_database() as database_url:
        url = libpq_url(database_url)
        with psycopg.connect(url, autocommit=True) as conn:
            for statement in SETUP:
                conn.execute(statement)
        print(f"small write transactions, {seconds:g} s per run")
        for name, write in MODES.items():
            one = rate(url, write, 1, seconds)
            many = rate(url, write, writers, seconds)
            print(f"  {name:10}  1 writer: {one:7.1f}/s  {writers} writers: {many:7.1f}/s  ({many / one:.2f}x)")


if __name__ == "__main__":
    main(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0, int(sys.argv[2]) if len(sys.argv) > 2 else 8)
