"""Nomad's API clients read logs and files from a node's advertised HTTPAddr first and ask the
servers only when the node advertises none or cannot be reached (api/fs.go's queryClientNode).
corral's nodes advertise none: their endpoint answers only the servers' signed requests
(docs/security.md, "Nomad's API clients and the node's address"). So a Nomad client's read goes
to the servers, which check the caller's token (read-logs on the namespace) and proxy."""

from __future__ import annotations

import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from app.settings.config import Settings
from client.endpoint.logs_http import serve
from tests.support.api import minimal_job, node_body
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def nomad_logs(api: FlaskClient, alloc_id: str, token: str | None) -> tuple[int, bytes]:
    """What Nomad's AllocFS.Logs does: look the node up; with no HTTPAddr, query the servers."""
    headers = {"X-Nomad-Token": token} if token else {}
    alloc = api.get(f"/v1/allocation/{alloc_id}", headers=headers)
    if alloc.status_code != 200:
        return alloc.status_code, alloc.data
    assert alloc.json is not None
    node = api.get(f"/v1/node/{alloc.json['NodeID']}", headers=headers)
    if node.status_code == 200:
        assert node.json is not None and node.json["HTTPAddr"] == "", "a Nomad client would ask the node itself"
    reply = api.get(f"/v1/client/fs/logs/{alloc_id}", query_string={"task": "t", "plain": "true"}, headers=headers)
    return reply.status_code, reply.data


class Node:
    """A node's client endpoint serving one allocation's log directory."""

    def __init__(self, tmp_path: Path) -> None:
        self.dirs: dict[str, Path] = {}
        self.keys: dict[str, str] = {}
        self.server = serve("127.0.0.1:0", lambda a: self.dirs.get(a), lambda: self.keys.get("link", ""))
        self.address = f"127.0.0.1:{self.server.server_address[1]}"
        (tmp_path / "alloc" / "logs").mkdir(parents=True)
        (tmp_path / "alloc" / "logs" / "t.stdout.0").write_text("from the task\n")
        self.alloc_dir = tmp_path

    def register(self, api: FlaskClient, pg: Conn, headers: dict[str, str]) -> str:
        node_id = str(uuid.uuid4())
        body = node_body(node_id, HTTPAddr=self.address, SecretID=str(uuid.uuid4()))
        reply = api.put("/v1/node/register", json={"Node": body}, headers=headers)
        assert reply.status_code == 200 and reply.json is not None, reply.json
        self.keys["link"] = reply.json["LinkKey"]
        assert api.put("/v1/jobs", json={"Job": minimal_job("web")}, headers=headers).status_code == 200
        eval_id = pg.execute("SELECT id::text FROM evaluations ORDER BY create_index DESC LIMIT 1").fetchone()
        assert eval_id is not None
        alloc_id = insert_allocation(pg, node_id, str(eval_id[0]))
        pg.commit()
        self.dirs[alloc_id] = self.alloc_dir
        return alloc_id

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def node(tmp_path: Path) -> Iterator[Node]:
    found = Node(tmp_path)
    yield found
    found.close()


@pytest.fixture
def acl_app(database_url: str) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=5, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


def token(api: FlaskClient, root: dict[str, str], name: str, rules: str) -> str:
    assert api.put(f"/v1/acl/policy/{name}", json={"Name": name, "Rules": rules}, headers=root).status_code == 200
    reply = api.put("/v1/acl/token", json={"Name": name, "Type": "client", "Policies": [name]}, headers=root)
    assert reply.status_code == 200 and reply.json is not None
    secret: str = reply.json["SecretID"]
    return secret


def test_with_acls_off_a_nomad_client_gets_the_logs_through_the_servers(
    client: FlaskClient, pg: Conn, node: Node
) -> None:
    alloc_id = node.register(client, pg, {})
    assert nomad_logs(client, alloc_id, None) == (200, b"from the task\n")


def test_with_acls_on_the_callers_token_needs_read_logs(acl_app: Flask, pg: Conn, node: Node) -> None:
    api = acl_app.test_client()
    bootstrap: Any = api.post("/v1/acl/bootstrap").json
    root = {"X-Nomad-Token": bootstrap["SecretID"]}
    alloc_id = node.register(api, pg, root)
    reader = token(api, root, "reader", 'namespace "default" { capabilities = ["read-job"] }\nnode { policy = "read" }')
    logs = token(api, root, "logs", 'namespace "default" { capabilities = ["read-job", "read-logs"] }')
    assert nomad_logs(api, alloc_id, reader)[0] == 403
    assert nomad_logs(api, alloc_id, None)[0] == 403
    assert nomad_logs(api, alloc_id, logs) == (200, b"from the task\n")


def test_the_nodes_endpoint_answers_no_api_client(client: FlaskClient, pg: Conn, node: Node) -> None:
    """Even a caller that knows the link address (LinkAddr) and holds a token gets nothing
    from the node itself: only the servers' signed requests are served there."""
    alloc_id = node.register(client, pg, {})
    url = f"http://{node.address}/v1/client/fs/logs/{alloc_id}?task=t&plain=true"
    request = urllib.request.Request(url, headers={"X-Nomad-Token": str(uuid.uuid4())})
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code in (403, 404)
    assert b"from the task" not in refused.value.read()
