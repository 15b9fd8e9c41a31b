"""The client's dynamic node metadata: applied changes are saved in the data directory, merged
over the configured meta (null removes a key, a static one too) and sent with a new
registration; a client started again on the same directory registers with them."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import httpx
import pytest

from client.agent import Client
from client.config import ClientConfig
from client.node_meta import MetaError, NodeMeta, check

pytestmark = pytest.mark.unit
NANOS = 1_000_000_000


def agent(tmp_path: Path, registered: list[dict[str, object]]) -> Client:
    def handle(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/v1/node/register":
            registered.append(json.loads(request.content)["Node"])
            return httpx.Response(200, json={"HeartbeatTTL": NANOS})
        return httpx.Response(404)

    config = ClientConfig(data_dir=tmp_path, drivers=("mock",), meta={"zone": "a", "tier": "web"})
    made = Client(config, threading.Event())
    made.api._http = httpx.Client(base_url="http://servers.test", transport=httpx.MockTransport(handle))
    made.api.node_id, made.api.secret = uuid.uuid4(), "secret"
    return made


def test_apply_saves_merges_and_registers_again(tmp_path: Path) -> None:
    registered: list[dict[str, object]] = []
    first = agent(tmp_path, registered)
    assert first.node_body()["Meta"] == {"zone": "a", "tier": "web"}
    first.apply_meta({"rack": "r1", "zone": None})
    assert registered[-1]["Meta"] == {"tier": "web", "rack": "r1"}
    assert first.node_meta.response() == {
        "Meta": {"tier": "web", "rack": "r1"},
        "Dynamic": {"rack": "r1", "zone": None},
        "Static": {"zone": "a", "tier": "web"},
    }
    again = agent(tmp_path, registered)  # a restart on the same data directory
    assert again.node_body()["Meta"] == {"tier": "web", "rack": "r1"}
    again.apply_meta({"zone": "b"})  # a dynamic value overrides the removal
    assert registered[-1]["Meta"] == {"zone": "b", "tier": "web", "rack": "r1"}


def test_keys_and_values_are_checked(tmp_path: Path) -> None:
    for bad in ({"": "x"}, {"a b": "x"}, {"a=b": "x"}, {"k": 3}):
        with pytest.raises(MetaError):
            check(bad)
    (tmp_path / "node_meta.json").write_text("{not json")
    assert NodeMeta(tmp_path, {"zone": "a"}).merged() == {"zone": "a"}  # an unreadable file is ignored
