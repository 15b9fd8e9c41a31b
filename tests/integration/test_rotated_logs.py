"""`alloc logs` over the files logmon rotates (`<task>.stdout.N`): the whole log in order across
files, the tail from origin=end reaching back over a file boundary, frames naming each file; and
a node's HostVolumes as registered, served back and read by the scheduler's snapshot."""

from __future__ import annotations

import base64
import json
import uuid
from pathlib import Path

import psycopg
import pytest
from flask.testing import FlaskClient

from client.endpoint.logs_http import serve
from tests.support.api import minimal_job, node_body, register
from tests.support.rows import insert_allocation

pytestmark = pytest.mark.integration
Conn = psycopg.Connection[tuple[object, ...]]


def node_with_alloc(
    client: FlaskClient, pg: Conn, http_addr: str, secret: str, keys: dict[str, str]
) -> tuple[str, str]:
    """A node at http_addr with an allocation; its link key goes into `keys` under "link"."""
    node_id = str(uuid.uuid4())
    reply = client.put("/v1/node/register", json={"Node": node_body(node_id, HTTPAddr=http_addr, SecretID=secret)})
    assert reply.status_code == 200 and reply.json is not None, reply.json
    keys["link"] = reply.json["LinkKey"]
    eval_id = pg.execute("SELECT id::text FROM evaluations ORDER BY create_index DESC LIMIT 1").fetchone()
    assert eval_id is not None
    alloc_id = insert_allocation(pg, node_id, str(eval_id[0]))
    pg.commit()
    return node_id, alloc_id


def test_logs_read_across_rotated_files(client: FlaskClient, pg: Conn, tmp_path: Path) -> None:
    register(client, minimal_job("web"))
    dirs: dict[str, Path] = {}
    keys: dict[str, str] = {}
    server = serve("127.0.0.1:0", lambda a: dirs.get(a), lambda: keys.get("link", ""))
    try:
        _, alloc_id = node_with_alloc(client, pg, f"127.0.0.1:{server.server_address[1]}", str(uuid.uuid4()), keys)
        logs = tmp_path / "alloc" / "logs"
        logs.mkdir(parents=True)
        # Files 0 and 1 were rotated out (max_files = 3): 2, 3 and 4 are left, 4 being written.
        for index, text in ((2, "two-a\ntwo-b\n"), (3, "three\n"), (4, "four\n")):
            (logs / f"t.stdout.{index}").write_text(text)
        (logs / "t.stderr.0").write_text("other stream\n")
        dirs[alloc_id] = tmp_path
        pg.execute("UPDATE allocations SET client_status = 'complete' WHERE id = %s", (alloc_id,))
        pg.commit()
        url = f"/v1/client/fs/logs/{alloc_id}"
        whole = client.get(url, query_string={"task": "t", "plain": "true"})
        assert whole.data == b"two-a\ntwo-b\nthree\nfour\n"
        tail = client.get(url, query_string={"task": "t", "origin": "end", "offset": 11, "plain": "true"})
        assert tail.data == b"three\nfour\n"  # reaches back over the boundary of the newest file
        skipped = client.get(url, query_string={"task": "t", "offset": 6, "plain": "true"})
        assert skipped.data == b"two-b\nthree\nfour\n"
        followed = client.get(url, query_string={"task": "t", "follow": "true"})
        frames = [json.loads(f) for f in followed.data.replace(b"}{", b"}\n{").splitlines() if f != b"{}"]
        assert [f["File"] for f in frames] == [f"alloc/logs/t.stdout.{i}" for i in (2, 3, 4)]
        assert b"".join(base64.b64decode(f["Data"]) for f in frames) == b"two-a\ntwo-b\nthree\nfour\n"
        assert frames[0]["Offset"] == 12 and frames[-1]["Offset"] == 5  # offsets are within each file
    finally:
        server.shutdown()
        server.server_close()


def test_host_volumes_are_registered_and_served(client: FlaskClient, pg: Conn) -> None:
    node_id = str(uuid.uuid4())
    volumes = {"data": {"Name": "data", "Path": "/srv/data", "ReadOnly": True}}
    reply = client.put("/v1/node/register", json={"Node": node_body(node_id, HostVolumes=volumes)})
    assert reply.status_code == 200, reply.json
    node = client.get(f"/v1/node/{node_id}").json
    assert node is not None and node["HostVolumes"] == volumes
    stored = pg.execute("SELECT host_volumes FROM nodes WHERE id = %s", (node_id,)).fetchone()
    assert stored is not None and stored[0] == volumes
    bad = client.put("/v1/node/register", json={"Node": node_body(str(uuid.uuid4()), HostVolumes={"x": {"Name": "x"}})})
    assert bad.status_code == 400 and "HostVolumes" in json.dumps(bad.json)
