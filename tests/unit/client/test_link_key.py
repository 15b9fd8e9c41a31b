"""The client takes its node's link key from the servers' registration and heartbeat answers
(a changed link secret reaches it at its next heartbeat) and keeps it in its 0600 state file,
so a restarted client answers the servers before it has registered again."""

from __future__ import annotations

import json
import stat
import threading
from pathlib import Path

import httpx
import pytest

from client.agent import Client
from client.config import ClientConfig

pytestmark = pytest.mark.unit
NANOS = 1_000_000_000


def agent(data_dir: Path, keys: dict[str, str]) -> Client:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/node/register":
            return httpx.Response(200, json={"HeartbeatTTL": NANOS, "LinkKey": keys["register"]})
        if request.url.path.endswith("/heartbeat"):
            body = {"HeartbeatTTL": NANOS, "NodeStatus": "ready", "ForceGCIndex": 0, "LinkKey": keys["heartbeat"]}
            return httpx.Response(200, json=body)
        return httpx.Response(200, json={})

    made = Client(ClientConfig(data_dir=data_dir, drivers=("mock",)), threading.Event())
    made.api._http = httpx.Client(base_url="http://servers.test", transport=httpx.MockTransport(handle))
    return made


def saved(data_dir: Path) -> str:
    return str(json.loads((data_dir / "client.json").read_text())["link_key"])


def test_the_link_key_is_taken_from_the_servers_and_kept(tmp_path: Path) -> None:
    keys = {"register": "k1", "heartbeat": "k2"}
    first = agent(tmp_path, keys)
    first._load_identity()
    assert first.api.link_key == ""  # nothing to verify with before the servers answer
    first.register()
    assert first.api.link_key == "k1" and saved(tmp_path) == "k1"
    assert stat.S_IMODE((tmp_path / "client.json").stat().st_mode) == 0o600
    first._heartbeat()
    assert first.api.link_key == "k2" and saved(tmp_path) == "k2"
    restarted = agent(tmp_path, keys)
    restarted._load_identity()
    assert restarted.api.link_key == "k2" and restarted.api.secret == first.api.secret
