"""Every connection names its role and carries that role's timeouts."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from app.db.engines import ROLE_TIMEOUTS, make_engine

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("role", ["api", "worker", "applier", "leader", "migrate"])
def test_role_settings_reach_the_server(database_url: str, role: str) -> None:
    engine = make_engine(database_url, role, pool_size=1)
    limits = ROLE_TIMEOUTS[role]
    with engine.connect() as conn:
        settings = {
            name: setting
            for name, setting in conn.execute(
                text(
                    "SELECT name, setting FROM pg_settings WHERE name IN ('application_name', 'statement_timeout', "
                    "'lock_timeout', 'idle_in_transaction_session_timeout', 'TimeZone')"
                )
            ).all()
        }
    engine.dispose()
    assert settings == {
        "application_name": f"corral-{role}",
        "statement_timeout": str(limits.statement_ms),
        "lock_timeout": str(limits.lock_ms),
        "idle_in_transaction_session_timeout": str(limits.idle_in_transaction_ms),
        "TimeZone": "UTC",
    }


def test_api_statement_timeout_cancels_a_runaway_query(database_url: str) -> None:
    engine = make_engine(database_url, "api", pool_size=1)
    with engine.connect() as conn, pytest.raises(Exception, match="statement timeout"):
        conn.execute(text("SELECT pg_sleep(30)"))
    engine.dispose()
