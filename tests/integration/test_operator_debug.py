"""`corral operator debug`: a tar.gz in Nomad's layout with the cluster's state at each interval,
the nodes asked for, the server's host data and its log over the duration."""

from __future__ import annotations

import json
import logging
import re
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask.testing import FlaskClient

from app.cli import main
from app.cli.support import http
from tests.support.api import minimal_job, node_body, register
from tests.support.streams import frames

pytestmark = pytest.mark.integration
INTERVAL_FILES = {"jobs", "allocations", "evaluations", "deployments", "nodes", "metrics", "operator-scheduler"}


def test_the_archive_holds_state_intervals_nodes_host_and_log(
    client: FlaskClient, sent: list[tuple[str, str, object]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    register(client, minimal_job("web"))
    node_id = str(uuid.uuid4())
    assert client.put("/v1/node/register", json={"Node": node_body(node_id)}).status_code == 200

    def stream_text(path: str, params: dict[str, str]) -> Iterator[bytes]:
        resp = client.get(path, query_string=params, buffered=False)
        chunks = frames(resp)
        yield next(chunks)
        logging.getLogger("corral.test.debug").warning("captured-by-debug")
        yield next(chunks)
        resp.close()

    monkeypatch.setattr(http, "stream_text", stream_text)
    out = tmp_path / "bundle"
    args = ["operator", "debug", "-duration", "2s", "-interval", "1s", "-node-id", "all", "-output", str(out)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    created = re.search(r"Created debug archive: (\S+\.tar\.gz)", result.stdout)
    assert created, result.output
    assert "Capture interval 0000" in result.stdout and "Clients: (1)" in result.stdout
    with tarfile.open(created.group(1)) as archive:
        names = archive.getnames()
        root = names[0].split("/")[0]
        assert root.startswith("corral-debug-") and all(n.startswith(root + "/") for n in names)
        files = {n.removeprefix(root + "/") for n in names}

        def read(name: str) -> str:
            member = archive.extractfile(f"{root}/{name}")
            assert member is not None, name
            return member.read().decode()

        for name in ("agent-self", "members", "namespaces", "regions", "leader"):
            assert f"cluster/{name}.json" in files
        servers = {f.split("/")[1] for f in files if f.startswith("server/")}
        assert len(servers) == 1
        server = servers.pop()
        assert "OS" in json.loads(read(f"server/{server}/agent-host.json"))
        assert "captured-by-debug" in read(f"server/{server}/monitor.log")
        assert json.loads(read(f"client/{node_id}/node.json"))["ID"] == node_id
        assert "error" in json.loads(read(f"client/{node_id}/host-stats.json"))  # no client answers for it here
        intervals = sorted({f.split("/")[1] for f in files if f.startswith("interval/")})
        assert intervals[:2] == ["0000", "0001"]
        for interval in intervals:
            assert {f.split("/")[2].removesuffix(".json") for f in files if f.startswith(f"interval/{interval}/")} == (
                INTERVAL_FILES
            )
        assert [j["ID"] for j in json.loads(read("interval/0000/jobs.json"))] == ["web"]
        assert "Gauges" in json.loads(read("interval/0001/metrics.json"))


def test_bad_flags_are_refused(client: FlaskClient, sent: list[tuple[str, str, object]]) -> None:
    longer = CliRunner().invoke(main, ["operator", "debug", "-duration", "1s", "-interval", "2s"])
    assert longer.exit_code == 2 and "-interval" in longer.output
    bad = CliRunner().invoke(main, ["operator", "debug", "-duration", "soon"])
    assert bad.exit_code == 2 and "-duration" in bad.output
    unknown = CliRunner().invoke(main, ["operator", "debug", "-duration", "1s", "-interval", "1s", "-node-id", "ffff"])
    assert unknown.exit_code == 2 and "-node-id" in unknown.output
