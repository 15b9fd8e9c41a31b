"""Alembic environment: one advisory-locked connection, one transaction per migration."""

from __future__ import annotations

from alembic import context
from sqlalchemy import text

from app.db.engines import make_engine
from app.models import Base

# Two processes running `corral db upgrade` at once must not interleave.
MIGRATION_LOCK_KEY = 0x636F7272616C  # "corral"


def run_migrations_online() -> None:
    url = context.config.attributes.get("database_url")
    if not url:
        raise RuntimeError("alembic needs config.attributes['database_url']; use `corral db upgrade`")
    engine = make_engine(url, "migrate", pool_size=1)
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": MIGRATION_LOCK_KEY})
            # Session-wide, so every revision's statements give way rather than queue the hot
            # path behind an ACCESS EXCLUSIVE lock (app/db/schema.upgrade retries them).
            lock_timeout = str(context.config.attributes.get("lock_timeout") or "5s")
            conn.execute(text("SELECT set_config('lock_timeout', :t, false)"), {"t": lock_timeout})
            conn.commit()
            try:
                context.configure(
                    connection=conn,
                    target_metadata=Base.metadata,
                    transaction_per_migration=True,
                    compare_server_default=True,
                )
                with context.begin_transaction():
                    context.run_migrations()
                conn.commit()
            finally:
                conn.rollback()  # a revision that failed leaves its transaction aborted
                conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": MIGRATION_LOCK_KEY})
                conn.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    raise RuntimeError("offline (--sql) migrations are not supported")
run_migrations_online()
