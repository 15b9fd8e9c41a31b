"""The API's Flask application factory (kept out of `app/__init__.py` so that importing any `app`
module, the CLI's above all, does not import Flask)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from flask import Flask

from app.settings.config import Settings

# The API's pools ping a connection only when it sat idle this long (app.db.engines.ping_after_idle):
# under load every checkout would otherwise cost a round trip.
PING_AFTER_IDLE_S = 1.0

if TYPE_CHECKING:
    from app.api.http.replicas import Standby


def create_app(settings: Settings | None = None, database_url: str | None = None) -> Flask:
    """The API application. Refuses to start against a database not at the current schema."""
    import structlog
    from sqlalchemy.exc import InterfaceError, OperationalError

    from app.acl import link_secret
    from app.api import register
    from app.api.http.blocking import IndexWatcher
    from app.api.http.context import ApiState, Lane
    from app.api.http.json_answers import OrjsonProvider
    from app.db.engines import make_engine, make_sessionmaker
    from app.db.schema import ensure_current
    from app.keyring import root_key
    from app.settings.config import get_settings

    settings = settings or get_settings()
    url = database_url or settings.database_url
    if not url:
        raise RuntimeError("create_app needs a database URL (CORRAL_DATABASE_URL); `corral server` sets it")
    # Requests queue for a pooled connection instead of opening more: thousands of greenlets
    # must not become thousands of backends. Client traffic has a pool of its own.
    timeout = settings.http_db_pool_timeout_s
    engine = make_engine(
        url,
        "api",
        pool_size=settings.http_db_pool_size,
        max_overflow=0,
        pool_timeout_s=timeout,
        ping_after_idle_s=PING_AFTER_IDLE_S,
    )
    try:
        ensure_current(engine)
    except (OperationalError, InterfaceError) as err:
        # A gunicorn worker (re)started while the database is away: serve 503s until it is
        # back rather than fail to boot (gunicorn would then stop the whole server). The
        # server checked the schema before forking its workers.
        structlog.get_logger(__name__).warning(
            "database unavailable while the API starts; answering 503 until it returns", error=str(err.orig)
        )
    node_engine = make_engine(
        url,
        "api",
        pool_size=settings.http_node_pool_size,
        max_overflow=0,
        pool_timeout_s=timeout,
        ping_after_idle_s=PING_AFTER_IDLE_S,
    )
    reads = make_sessionmaker(engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True))
    node_reads = make_sessionmaker(
        node_engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
    )
    app = Flask("corral")
    app.json = OrjsonProvider(app)  # answers written by orjson (json_answers.py)
    # An ID may hold slashes (a job named "/" is "/v1/job///evaluate" once decoded): Werkzeug's
    # default answers such paths with an HTML redirect to a merged path that names another object.
    app.url_map.merge_slashes = False
    app.config["MAX_CONTENT_LENGTH"] = settings.http_max_body_bytes
    app.extensions["corral"] = ApiState(
        settings=settings,
        database_url=url,
        engine=engine,
        ordinary=Lane(writes=make_sessionmaker(engine), reads=reads),
        client=Lane(writes=make_sessionmaker(node_engine), reads=node_reads),
        watcher=IndexWatcher(url),
        client_engine=node_engine,
        standby=_standby(settings, url) if settings.read_database_url else None,
        link_secret=link_secret.for_app(settings),
        root_key=root_key.for_app(settings),
    )
    register(app)
    return app


def _standby(settings: Settings, primary_url: str) -> Standby:
    """Pools on CORRAL_READ_DATABASE_URL mirroring the primary's two lanes (reads only), and an
    index watcher that polls the standby and listens on the primary (a standby has no NOTIFY)."""
    from app.api.http.blocking import IndexWatcher
    from app.api.http.replicas import Standby
    from app.db.engines import make_engine, make_sessionmaker

    url = settings.read_database_url
    assert url is not None
    timeout = settings.http_db_pool_timeout_s
    engines = tuple(
        make_engine(
            url, "api", pool_size=size, max_overflow=0, pool_timeout_s=timeout, ping_after_idle_s=PING_AFTER_IDLE_S
        )
        for size in (settings.http_db_pool_size, settings.http_node_pool_size)
    )
    ordinary, client = (
        make_sessionmaker(engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True))
        for engine in engines
    )
    return Standby(
        ordinary=ordinary,
        client=client,
        watcher=IndexWatcher(url, listen_url=primary_url, replay_wait_s=settings.read_replay_wait_s),
        replay_wait_s=settings.read_replay_wait_s,
        engines=engines,
    )
