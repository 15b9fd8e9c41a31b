"""/v1/client/metadata: the servers forward `node meta read|apply` to the node's client over the
signed link; the client keeps the dynamic metadata in its data directory and registers again
with it merged into its Meta (as client/agent.py's apply_meta does), so the node's Meta in the
database (what constraints see) changes; `corral node meta` drives the same routes."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient

from app.cli import main
from client.endpoint.logs_http import serve
from client.node_meta import NodeMeta
from tests.support.api import node_body

pytestmark = pytest.mark.integration


@pytest.fixture
def node(client: FlaskClient, tmp_path: Path) -> Iterator[tuple[str, NodeMeta]]:
    """A node whose client endpoint keeps node metadata (static zone=a) and registers again on apply."""
    node_id, secret = str(uuid.uuid4()), str(uuid.uuid4())
    keys: dict[str, str] = {}
    meta = NodeMeta(tmp_path, {"zone": "a"})

    def register() -> None:
        body = node_body(node_id, HTTPAddr=address, SecretID=secret, Meta=meta.merged())
        reply = client.put("/v1/node/register", json={"Node": body})
        assert reply.status_code == 200, reply.json
        assert reply.json is not None
        keys["link"] = reply.json.get("LinkKey") or keys.get("link", "")  # as client/api.py keeps it

    def apply(changes: Mapping[str, str | None]) -> None:
        meta.apply(changes)
        register()

    server = serve("127.0.0.1:0", lambda _: None, lambda: keys.get("link", ""), node_meta=meta, apply_meta=apply)
    address = f"127.0.0.1:{server.server_address[1]}"
    register()
    try:
        yield node_id, meta
    finally:
        server.shutdown()
        server.server_close()


def test_apply_reaches_the_client_which_keeps_it_and_the_node_meta_follows(
    client: FlaskClient, node: tuple[str, NodeMeta], tmp_path: Path
) -> None:
    node_id, _ = node
    applied = client.post("/v1/client/metadata", json={"NodeID": node_id, "Meta": {"rack": "r1", "zone": None}})
    assert applied.status_code == 200, applied.get_data(as_text=True)
    assert applied.json == {"Meta": {"rack": "r1"}, "Dynamic": {"rack": "r1", "zone": None}, "Static": {"zone": "a"}}
    stored = client.get(f"/v1/node/{node_id}").json
    assert stored is not None and stored["Meta"] == {"rack": "r1"}  # what the scheduler's constraints read
    assert client.get("/v1/client/metadata", query_string={"node_id": node_id}).json == applied.json
    saved = json.loads((tmp_path / "node_meta.json").read_text())
    assert saved == {"rack": "r1", "zone": None}
    assert NodeMeta(tmp_path, {"zone": "a"}).merged() == {"rack": "r1"}  # a restarted client keeps it


def test_bad_metadata_is_refused_naming_the_field(client: FlaskClient, node: tuple[str, NodeMeta]) -> None:
    node_id, _ = node
    for body, field in (
        ({"Meta": {"k": "v"}}, "NodeID"),
        ({"NodeID": node_id, "Meta": {}}, "Meta"),
        ({"NodeID": node_id, "Meta": {"bad key": "v"}}, "Meta.bad key"),
        ({"NodeID": node_id, "Meta": {"k": 3}}, "Meta.k"),
        ({"NodeID": "nope", "Meta": {"k": "v"}}, "NodeID"),
    ):
        refused = client.post("/v1/client/metadata", json=body)
        assert refused.status_code == 400 and refused.json is not None, body
        assert refused.json["errors"][0]["field"] == field, refused.json
    assert client.get("/v1/client/metadata").status_code == 400
    missing = client.get("/v1/client/metadata", query_string={"node_id": str(uuid.uuid4())})
    assert missing.status_code == 404


def test_corral_node_meta_apply_and_read(
    client: FlaskClient, node: tuple[str, NodeMeta], sent: list[tuple[str, str, object]]
) -> None:
    node_id, _ = node
    runner = CliRunner()
    applied = runner.invoke(main, ["node", "meta", "apply", "-node-id", node_id[:8], "-unset", "zone", "rack=r1"])
    assert applied.exit_code == 0, applied.output
    assert ("POST", "/v1/client/metadata", {"NodeID": node_id, "Meta": {"rack": "r1", "zone": None}}) in sent
    read = runner.invoke(main, ["node", "meta", "read", "-node-id", node_id])
    assert read.exit_code == 0, read.output
    shown = read.stdout[read.stdout.index("All Meta") :]  # after the server's log line, which shares stdout here
    assert shown.split("\n\n") == [
        "All Meta\nrack = r1",
        "Dynamic Meta\nrack = r1\nzone = <unset>",
        "Static Meta\nzone = a\n",
    ]
    as_json = runner.invoke(main, ["node", "meta", "read", "-node-id", node_id, "-json"]).stdout
    assert json.loads(as_json[as_json.index("{") :])["Static"] == {"zone": "a"}
    usage = runner.invoke(main, ["node", "meta", "apply", "-node-id", node_id])
    assert usage.exit_code == 2 and "KEY=VALUE" in usage.output
