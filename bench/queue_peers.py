"""The queue peers bench/broker_peers.py runs: PgQueuer and Procrastinate, each filled with
no-op jobs and drained by worker processes. Imported only inside those processes and the fill
step, so the bench runs (and reports them skipped) without the bench-peers extra.

Each drain returns how many jobs this process ran and when it finished the last one, so the
rate does not include a worker's idle wait for more work before it stops."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

# Jobs this process ran, and the monotonic time it finished the last one (each peer process
# is a fresh interpreter, so the counter is its own).
_ran: list[float] = [0, 0.0]


def _count() -> None:
    _ran[0] += 1
    _ran[1] = time.monotonic()


async def pgqueuer_fill(dsn: str, jobs: int) -> None:
    import psycopg
    from pgqueuer import PsycopgDriver, Queries

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        queries = Queries(PsycopgDriver(conn))
        await queries.install()
        for start in range(0, jobs, 5000):
            size = min(5000, jobs - start)
            await queries.enqueue(["noop"] * size, [None] * size, [0] * size)


async def pgqueuer_drain(dsn: str, batch: int) -> tuple[int, float]:
    import psycopg
    from pgqueuer import PsycopgDriver, Queries, QueueManager
    from pgqueuer.models import Job
    from pgqueuer.types import QueueExecutionMode

    async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
        manager = QueueManager(Queries(PsycopgDriver(conn)))

        @manager.entrypoint("noop")
        async def noop(job: Job) -> None:
            _count()

        await manager.run(dequeue_timeout=timedelta(seconds=0.5), batch_size=batch, mode=QueueExecutionMode.drain)
    return int(_ran[0]), _ran[1]


def procrastinate_app(dsn: str) -> Any:
    import procrastinate

    return procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=dsn))


async def procrastinate_fill(dsn: str, jobs: int) -> None:
    app = procrastinate_app(dsn)
    task = app.task(name="noop", queue="bench")(_noop)
    async with app.open_async():
        await app.schema_manager.apply_schema_async()
        for start in range(0, jobs, 5000):
            await task.batch_defer_async(*({} for _ in range(min(5000, jobs - start))))


async def procrastinate_drain(dsn: str, batch: int) -> tuple[int, float]:
    """Runs a worker until it finds the queue empty (wait=False); returns the jobs it ran."""
    app = procrastinate_app(dsn)
    app.task(name="noop", queue="bench")(_noop)
    async with app.open_async():
        await app.run_worker_async(
            queues=["bench"], wait=False, concurrency=batch, install_signal_handlers=False, listen_notify=False
        )
    return int(_ran[0]), _ran[1]


async def _noop() -> None:
    _count()
