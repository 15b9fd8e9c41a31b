"""`corral leader`: periodic cluster duties on APScheduler intervals, run only by the holder of
the leader role. Every tick is fenced by the term and safe to run twice."""

from __future__ import annotations

import threading
from collections.abc import Callable

import psycopg
import structlog
from apscheduler.executors.pool import ThreadPoolExecutor
from apscheduler.schedulers.background import BackgroundScheduler
from sqlalchemy import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from app.db.engines import make_engine
from app.db.leadership import Leadership
from app.leader import (
    deployment_watch,
    eval_sweeps,
    event_gc,
    gc_schedule,
    index_log,
    node_lifecycle,
    periodic_launch,
)
from app.settings.config import Settings
from app.store.sql import query
from workers.election import stand_for_election
from workers.loops import Streak

log = structlog.get_logger(__name__)
RENEW_EVERY_S = 1.0
Duty = Callable[[Session], int]
# name -> (seconds between runs, duty)
DUTIES: dict[str, tuple[float, Duty]] = {
    "reap-failed-evaluations": (5.0, eval_sweeps.reap_over_limit),
    "sweep-max-plan-blocked": (60.0, eval_sweeps.sweep_max_plan_blocked),
    "node-lifecycle": (1.0, node_lifecycle.node_lifecycle),
    # Every second: a cron spec may have a seconds field. Writes nothing unless a launch is due.
    "periodic-launch": (1.0, periodic_launch.launch_due),
    "compact-state-index": (index_log.COMPACT_EVERY_S, index_log.compact_index_log),
}


def duties(settings: Settings) -> dict[str, tuple[float, Duty]]:
    """The fixed duties, the deployment watcher and one garbage-collection tick per collector."""
    # Nomad batches deployment-watcher evaluations per job over one second.
    watch = {"deployment-watch": (1.0, deployment_watch.watcher(settings.job_max_versions))}
    events = {"event-gc": (settings.event_gc_interval_s, event_gc.collector(settings))}
    return DUTIES | watch | events | gc_schedule.duties(settings)


def run_leader(settings: Settings, database_url: str, stop: threading.Event) -> None:
    engine = make_engine(database_url, "leader", pool_size=2)
    try:
        # Each term builds its duties afresh: the deployment watcher keeps state for its term only.
        stand_for_election(engine, "leader", stop, lambda lead: _lead(engine, lead, stop, duties(settings)))
    finally:
        engine.dispose()


def _lead(
    engine: Engine,
    lead: Leadership,
    stop: threading.Event,
    schedule: dict[str, tuple[float, Duty]],
) -> None:
    deposed = threading.Event()
    # One thread: every duty runs on the lock holder's connection, one at a time.
    scheduler = BackgroundScheduler(executors={"default": ThreadPoolExecutor(1)}, timezone="UTC")
    for name, (seconds, duty) in schedule.items():
        scheduler.add_job(
            _tick,
            "interval",
            seconds=seconds,
            args=(lead, name, duty, deposed, Streak(f"leader duty {name!r}", duty=name)),
            id=name,
            max_instances=1,
            coalesce=True,
            misfire_grace_time=max(1, int(seconds)),
        )
    scheduler.start()
    try:
        with engine.connect() as conn:
            while not stop.wait(RENEW_EVERY_S) and not deposed.is_set():
                if not lead.renew(conn):
                    log.warning("leader term moved on; stepping down", term=lead.term)
                    return
    finally:
        scheduler.shutdown(wait=True)
    if deposed.is_set():
        raise DBAPIError("leader duty", None, RuntimeError("stepped down"))


def _tick(lead: Leadership, name: str, duty: Duty, deposed: threading.Event, streak: Streak) -> None:
    try:
        with Session(bind=lead.connection) as session, session.begin():
            changed = duty(session)
            fenced = session.execute(query("fence_term"), {"role": "leader", "term": lead.term}).first()
            if fenced is None:
                deposed.set()
                raise RuntimeError("leader term moved on; rolling back")
        streak.succeeded()
        if changed:
            log.info("leader duty", duty=name, changed=changed)
    except (DBAPIError, psycopg.Error) as err:
        # The lock connection may be gone (and with it the advisory lock): step down and stand
        # for election again rather than carry on over a silently replaced connection.
        streak.failed(err)
        log.warning("leader duty failed on the database; stepping down", duty=name)
        deposed.set()
    except Exception as err:  # logged once per run of failures; the next tick tries again
        streak.failed(err, traceback=True)
