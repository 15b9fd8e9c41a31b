"""corral: a Nomad-style cluster scheduler whose whole state lives in PostgreSQL."""

from __future__ import annotations

from flask import Flask

from app.config import Settings


def create_app(settings: Settings | None = None, database_url: str | None = None) -> Flask:
    """The API application. Refuses to start against a database not at the current schema."""
    from app.api import register
    from app.api.blocking import IndexWatcher
    from app.api.context import ApiState
    from app.config import get_settings
    from app.db.engines import make_engine, make_sessionmaker
    from app.db.schema import ensure_current

    settings = settings or get_settings()
    url = database_url or settings.database_url
    if not url:
        raise RuntimeError("create_app needs a database URL (CORRAL_DATABASE_URL); `corral server` sets it")
    engine = make_engine(url, "api", pool_size=settings.http_threads)
    ensure_current(engine)
    reads = make_sessionmaker(engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True))
    app = Flask("corral")
    app.json.sort_keys = False  # type: ignore[attr-defined]
    app.extensions["corral"] = ApiState(
        settings=settings,
        database_url=url,
        engine=engine,
        writes=make_sessionmaker(engine),
        reads=reads,
        watcher=IndexWatcher(url),
    )
    register(app)
    return app
