"""The embedded PostgreSQL runs with corral's server settings: a new cluster from its first
start, an older one through ALTER SYSTEM (shared_buffers from its next start)."""

from __future__ import annotations

import psycopg
import pytest

from app.db.embedded import MIB, EmbeddedPostgres, server_settings
from app.db.engines import libpq_url
from bench.replication import shared_tmp_dir

pytestmark = pytest.mark.integration

GIB = 1024 * MIB
WANTED = {"shared_buffers": "256MB", "max_wal_size": "2GB", "checkpoint_timeout": "10min"}
SHOWN = "SELECT name, current_setting(name), pending_restart FROM pg_settings WHERE name = ANY(%s) ORDER BY name"


def shown(url: str) -> dict[str, tuple[str, bool]]:
    with psycopg.connect(libpq_url(url)) as conn:
        return {name: (value, pending) for name, value, pending in conn.execute(SHOWN, (list(WANTED),)).fetchall()}


def test_a_new_cluster_starts_with_the_settings() -> None:
    with shared_tmp_dir("corral-test-embedded-") as data_dir:
        server = EmbeddedPostgres(data_dir, WANTED)
        try:
            settings = shown(server.start())
        finally:
            server.stop()
    assert settings == {
        "checkpoint_timeout": ("10min", False),
        "max_wal_size": ("2GB", False),
        "shared_buffers": ("256MB", False),
    }


def test_an_older_cluster_is_brought_up_to_date() -> None:
    with shared_tmp_dir("corral-test-embedded-") as data_dir:
        seen = []
        for settings in ({}, WANTED, WANTED):
            server = EmbeddedPostgres(data_dir, settings)
            try:
                seen.append(shown(server.start()))
            finally:
                server.stop()
    assert seen[0]["max_wal_size"] == ("1GB", False)  # initdb's defaults
    # Applied at once where the server allows it; shared_buffers waits for the next start.
    assert seen[1] == {
        "checkpoint_timeout": ("10min", False),
        "max_wal_size": ("2GB", False),
        "shared_buffers": ("128MB", True),
    }
    assert seen[2]["shared_buffers"] == ("256MB", False)


@pytest.mark.parametrize(
    ("memory", "shared_buffers"),
    [(1 * GIB, "128MB"), (4 * GIB, "256MB"), (8 * GIB, "512MB"), (16 * GIB, "1024MB"), (256 * GIB, "1024MB")],
)
def test_shared_buffers_is_a_sixteenth_of_memory_within_bounds(memory: int, shared_buffers: str) -> None:
    assert server_settings(memory)["shared_buffers"] == shared_buffers
