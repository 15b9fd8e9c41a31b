"""/v1/agent/monitor (the server's log lines at a level, as Nomad's frames), /v1/agent/host
(Nomad's HostData), /v1/agent/pprof (501 naming what corral offers) and `corral monitor`."""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from flask import Flask
from flask.testing import FlaskClient

from app import create_app
from app.cli import main
from app.cli.agent_monitor import FrameDecoder
from app.cli.support import http
from app.settings.config import Settings
from tests.support.streams import frames

pytestmark = pytest.mark.integration
log = logging.getLogger("corral.test.monitor")


def decoded(chunk: bytes) -> str:
    frame = json.loads(chunk)
    return base64.b64decode(frame["Data"]).decode()


def test_monitor_streams_lines_at_the_level_asked(client: FlaskClient) -> None:
    at_info = client.get("/v1/agent/monitor?log_level=INFO", buffered=False)
    stream = frames(at_info)
    assert next(stream) == b"{}"  # open, as Nomad's stream starts
    log.debug("hidden-at-info")
    log.info("shown-at-info")
    text = decoded(next(stream))
    assert "shown-at-info" in text and "hidden-at-info" not in text
    at_info.close()
    at_debug = client.get("/v1/agent/monitor?log_level=debug&log_json=true", buffered=False)
    stream = frames(at_debug)
    next(stream)
    log.debug("shown-at-debug", extra={})
    line = json.loads(decoded(next(stream)).splitlines()[0])
    assert line["event"] == "shown-at-debug" and line["level"] == "debug"
    at_debug.close()
    plain = client.get("/v1/agent/monitor?plain=true", buffered=False)
    assert plain.content_type.startswith("text/plain")
    stream = frames(plain)
    next(stream)
    log.warning("plain-line")
    assert b"plain-line" in next(stream)
    plain.close()


def test_monitor_refuses_what_it_cannot_do(client: FlaskClient) -> None:
    bad = client.get("/v1/agent/monitor?log_level=loud")
    assert bad.status_code == 400 and "Unknown log level: loud" in bad.get_data(as_text=True)
    assert "log_level" in bad.get_data(as_text=True)
    assert client.get("/v1/agent/monitor?log_json=maybe").status_code == 400
    elsewhere = client.get("/v1/agent/monitor?node_id=abc")
    assert elsewhere.status_code == 400 and "node_id" in elsewhere.get_data(as_text=True)


def test_host_is_nomads_host_data_without_credentials(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CORRAL_TOKEN", "s3cret")
    monkeypatch.setenv("CORRAL_PLAIN_SETTING", "visible")
    body = client.get("/v1/agent/host").json
    assert isinstance(body, dict)
    assert set(body) == {"OS", "Network", "ResolvConf", "Hosts", "Environment", "Disk"}
    assert body["OS"].startswith("Linux ") and isinstance(body["Hosts"], str)
    assert body["Environment"]["CORRAL_TOKEN"] == "<redacted>"
    assert body["Environment"]["CORRAL_PLAIN_SETTING"] == "visible"
    assert any(entry["address"] == "127.0.0.1" for entry in body["Network"])
    assert all(set(d) == {"DiskMB", "UsedMB"} and d["DiskMB"] >= d["UsedMB"] for d in body["Disk"].values())


def test_pprof_names_what_corral_offers_instead(client: FlaskClient) -> None:
    for profile in ("heap", "profile", "goroutine"):
        answer = client.get(f"/v1/agent/pprof/{profile}")
        assert answer.status_code == 501
        assert "py-spy" in answer.get_data(as_text=True) and "/v1/metrics" in answer.get_data(as_text=True)


@pytest.fixture
def acl_app(database_url: str) -> Iterator[Flask]:
    app = create_app(Settings(database_url=database_url, max_blocking_wait_s=1, acl_enabled=True), database_url)
    yield app
    app.extensions["corral"].close()


def test_the_monitor_and_host_need_agent_read(acl_app: Flask) -> None:
    api = acl_app.test_client()
    root = {"X-Nomad-Token": api.post("/v1/acl/bootstrap").json["SecretID"]}  # type: ignore[index]
    for name, rules in (
        ("agent-read", 'agent { policy = "read" }'),
        ("ns-write", 'namespace "*" { policy = "write" }'),
    ):
        assert api.put(f"/v1/acl/policy/{name}", json={"Rules": rules}, headers=root).status_code == 200
    tokens = {}
    for name in ("agent-read", "ns-write"):
        made = api.put("/v1/acl/token", json={"Type": "client", "Policies": [name]}, headers=root)
        tokens[name] = {"X-Nomad-Token": made.json["SecretID"]}  # type: ignore[index]
    for path in ("/v1/agent/monitor", "/v1/agent/host"):
        assert api.get(path).status_code == 403
        assert api.get(path, headers=tokens["ns-write"]).status_code == 403
    allowed = api.get("/v1/agent/monitor", headers=tokens["agent-read"], buffered=False)
    assert allowed.status_code == 200
    allowed.close()
    assert api.get("/v1/agent/host", headers=tokens["agent-read"]).status_code == 200
    assert api.get("/v1/agent/pprof/heap", headers=tokens["agent-read"]).status_code == 403  # agent:write
    assert api.get("/v1/agent/pprof/heap", headers=root).status_code == 501


def test_corral_monitor_prints_the_streamed_lines(client: FlaskClient, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[dict[str, str | bool]] = []

    def stream_text(path: str, params: dict[str, str | bool]) -> Iterator[bytes]:
        asked.append(params)
        resp = client.get(path, query_string={k: str(v).lower() for k, v in params.items()}, buffered=False)
        chunks = frames(resp)
        yield next(chunks)
        log.error("for-the-cli")
        first = next(chunks)
        resp.close()
        yield first[:7]  # a frame split across reads
        yield first[7:]

    monkeypatch.setattr(http, "stream_text", stream_text)
    result = CliRunner().invoke(main, ["monitor", "-log-level", "ERROR"])
    assert result.exit_code == 0, result.output
    assert "for-the-cli" in result.output
    assert asked == [{"log_level": "error", "log_json": False}]
    refused = CliRunner().invoke(main, ["monitor", "-log-level", "loud"])
    assert refused.exit_code == 2 and "loud" in refused.output


def test_the_frame_decoder_joins_split_frames_and_skips_heartbeats() -> None:
    decoder = FrameDecoder()
    frame = json.dumps({"Data": base64.b64encode(b"line one\n").decode()}).encode()
    assert decoder.feed(b"{}" + frame[:5]) == []
    assert decoder.feed(frame[5:] + b"{}") == ["line one\n"]
