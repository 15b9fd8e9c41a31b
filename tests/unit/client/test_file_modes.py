"""The client's data directory is 0700 and its identity file (the node secret) 0600: other users
on the host read neither (the issue measured 0644 in a 0755 directory)."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest

from client.agent import IDENTITY, Client
from client.config import ClientConfig

pytestmark = pytest.mark.unit


def test_data_dir_and_identity_file_are_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "client"
    data_dir.mkdir(mode=0o755)
    client = Client(ClientConfig(data_dir=data_dir, drivers=("mock",)), threading.Event())
    try:
        client._load_identity()
        client._save_identity()
    finally:
        client.api.close()
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE((data_dir / IDENTITY).stat().st_mode) == 0o600
    assert client.api.secret in (data_dir / IDENTITY).read_text()
