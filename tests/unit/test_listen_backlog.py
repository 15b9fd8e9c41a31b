"""The API's listen queue follows the host's somaxconn, as Go's (and so Nomad's) listeners do."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.server import DEFAULT_BACKLOG, listen_backlog

pytestmark = pytest.mark.unit


def test_the_backlog_is_the_hosts_somaxconn(tmp_path: Path) -> None:
    source = tmp_path / "somaxconn"
    source.write_text("4096\n")
    assert listen_backlog(source) == 4096


def test_a_smaller_somaxconn_never_lowers_gunicorns_default(tmp_path: Path) -> None:
    source = tmp_path / "somaxconn"
    source.write_text("128\n")
    assert listen_backlog(source) == DEFAULT_BACKLOG


def test_an_unreadable_or_garbled_somaxconn_falls_back_to_the_default(tmp_path: Path) -> None:
    assert listen_backlog(tmp_path / "missing") == DEFAULT_BACKLOG
    garbled = tmp_path / "somaxconn"
    garbled.write_text("many")
    assert listen_backlog(garbled) == DEFAULT_BACKLOG
