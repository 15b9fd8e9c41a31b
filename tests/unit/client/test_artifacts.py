"""Artifacts against a local HTTP server the test starts: plain files, archives unpacked (or
not with mode = "file"), checksums, headers, refused destinations and schemes, file:// roots;
and through the allocation runner, the events and restart policy of a failed download."""

from __future__ import annotations

import hashlib
import io
import tarfile
import threading
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from client.allocs.alloc_runner import AllocRunner
from client.drivers import available
from client.tasks.artifacts import Artifact, ArtifactError, Fetcher
from tests.support.processes import wait_for

pytestmark = pytest.mark.unit


def _tar_gz(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zipped:
        for name, data in files.items():
            zipped.writestr(name, data)
    return buffer.getvalue()


CONTENT = {
    "/hello.txt": b"hello artifact\n",
    "/bundle.tar.gz": _tar_gz({"bin/app": b"#!/bin/sh\n", "conf/app.conf": b"port=1\n"}),
    "/bundle.zip": _zip({"a/b.txt": b"zipped\n"}),
    "/evil.tar.gz": _tar_gz({"../../outside": b"x"}),
}


@pytest.fixture
def server() -> Iterator[tuple[str, list[dict[str, str]]]]:
    seen: list[dict[str, str]] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            seen.append({"path": self.path, **{k.lower(): v for k, v in self.headers.items()}})
            body = CONTENT.get(self.path.split("?")[0])
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}", seen
    httpd.shutdown()
    httpd.server_close()


def _fetcher(tmp_path: Path, roots: tuple[Path, ...] = ()) -> Fetcher:
    task_dir = tmp_path / "alloc1" / "web"
    (task_dir / "local").mkdir(parents=True)
    return Fetcher(task_dir, tmp_path / "alloc1", roots)


def test_a_file_lands_in_local_with_its_name_and_headers_are_sent(tmp_path: Path, server: Any) -> None:
    url, seen = server
    fetcher = _fetcher(tmp_path)
    fetcher.fetch(Artifact(f"{url}/hello.txt", headers={"X-Token": "abc"}))
    assert (fetcher.task_dir / "local" / "hello.txt").read_bytes() == b"hello artifact\n"
    assert seen[-1]["x-token"] == "abc"


def test_archives_are_unpacked_into_the_destination(tmp_path: Path, server: Any) -> None:
    url, _ = server
    fetcher = _fetcher(tmp_path)
    fetcher.fetch(Artifact(f"{url}/bundle.tar.gz", destination="local/app"))
    fetcher.fetch(Artifact(f"{url}/bundle.zip", destination="local/z"))
    assert (fetcher.task_dir / "local/app/conf/app.conf").read_bytes() == b"port=1\n"
    assert (fetcher.task_dir / "local/z/a/b.txt").read_bytes() == b"zipped\n"
    assert not list(fetcher.task_dir.glob(".artifact-*"))  # the staging directory is gone


def test_mode_file_keeps_the_archive_as_the_named_file(tmp_path: Path, server: Any) -> None:
    url, _ = server
    fetcher = _fetcher(tmp_path)
    fetcher.fetch(Artifact(f"{url}/bundle.tar.gz", destination="local/b.tgz", mode="file"))
    assert (fetcher.task_dir / "local/b.tgz").read_bytes() == CONTENT["/bundle.tar.gz"]


@pytest.mark.parametrize("kind", ["md5", "sha1", "sha256", "sha512"])
def test_checksums_are_verified(tmp_path: Path, server: Any, kind: str) -> None:
    url, seen = server
    fetcher = _fetcher(tmp_path)
    good = hashlib.new(kind, CONTENT["/hello.txt"]).hexdigest()
    fetcher.fetch(Artifact(f"{url}/hello.txt", options={"checksum": f"{kind}:{good}"}))
    assert "checksum" not in seen[-1]["path"]  # go-getter's own option is not sent to the server
    bad = hashlib.new(kind, b"something else").hexdigest()
    with pytest.raises(ArtifactError, match="checksums did not match"):
        fetcher.fetch(Artifact(f"{url}/hello.txt", destination="local/again", options={"checksum": f"{kind}:{bad}"}))
    assert not (fetcher.task_dir / "local/again").exists()


@pytest.mark.parametrize(
    ("artifact", "message"),
    [
        (Artifact("http://127.0.0.1:1/x", destination="../../etc"), "escapes alloc directory"),
        (Artifact("ftp://example.com/x"), "not supported for scheme 'ftp'"),
        (Artifact("file:///etc/hostname"), "scheme 'file'"),
    ],
)
def test_refused_sources_and_destinations(tmp_path: Path, artifact: Artifact, message: str) -> None:
    with pytest.raises(ArtifactError, match=message):
        _fetcher(tmp_path).fetch(artifact)


def test_missing_file_and_escaping_archive_fail(tmp_path: Path, server: Any) -> None:
    url, _ = server
    fetcher = _fetcher(tmp_path)
    with pytest.raises(ArtifactError, match="bad response code: 404"):
        fetcher.fetch(Artifact(f"{url}/nothing.txt"))
    with pytest.raises(ArtifactError, match="escapes the destination"):
        fetcher.fetch(Artifact(f"{url}/evil.tar.gz"))
    assert not (tmp_path / "outside").exists()


def test_file_sources_only_under_the_configured_roots(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "data.txt").write_text("local data\n")
    fetcher = _fetcher(tmp_path, roots=(shared.resolve(),))
    fetcher.fetch(Artifact(f"file://{shared}/data.txt", destination="local/in"))
    assert (fetcher.task_dir / "local/in/data.txt").read_text() == "local data\n"
    (tmp_path / "secret").write_text("no")
    with pytest.raises(ArtifactError, match="artifact_file_roots"):
        fetcher.fetch(Artifact(f"file://{shared}/../secret"))


def _alloc(url: str, checksum: str) -> dict[str, Any]:
    task = {
        "Name": "web",
        "Driver": "mock",
        "Config": {"run_for": "10ms"},
        "RestartPolicy": {"Attempts": 1, "Interval": 60_000_000_000, "Delay": 0, "Mode": "fail"},
        "Artifacts": [{"GetterSource": f"{url}/hello.txt", "GetterOptions": {"checksum": checksum}}],
    }
    return {
        "ID": "a1b2c3d4-0000-0000-0000-00000000000a",
        "Name": "j.g[0]",
        "TaskGroup": "g",
        "Job": {"ID": "j", "Type": "batch", "TaskGroups": [{"Name": "g", "Tasks": [task]}]},
    }


def _run(tmp_path: Path, body: dict[str, Any]) -> AllocRunner:
    runner = AllocRunner(body, tmp_path / body["ID"], available(("mock",)), lambda _: None, node={"Name": "n"})
    runner.start()
    assert wait_for(lambda: runner.terminal, 30), runner.update()
    return runner


def test_a_bad_checksum_fails_the_task_after_its_restarts(tmp_path: Path, server: Any) -> None:
    url, seen = server
    runner = _run(tmp_path, _alloc(url, "sha256:" + "0" * 64))
    state = runner.tasks["web"].state
    kinds = [e["Type"] for e in state["Events"]]
    assert runner.client_status == "failed" and state["Failed"] is True
    assert kinds.count("Failed Artifact Download") == 2 and "Started" not in kinds  # one restart allowed
    failure = next(e for e in state["Events"] if e["Type"] == "Failed Artifact Download")
    assert "checksums did not match" in failure["DownloadError"] and "hello.txt" in failure["DisplayMessage"]
    assert kinds[-2:] == ["Not Restarting", "Failed"] and len(seen) == 2


def test_a_good_artifact_is_there_before_the_task_starts(tmp_path: Path, server: Any) -> None:
    url, _ = server
    runner = _run(tmp_path, _alloc(url, "sha256:" + hashlib.sha256(CONTENT["/hello.txt"]).hexdigest()))
    kinds = [e["Type"] for e in runner.tasks["web"].state["Events"]]
    assert runner.client_status == "complete"
    assert kinds.index("Downloading Artifacts") < kinds.index("Started")
    assert (runner.dir / "web/local/hello.txt").read_bytes() == CONTENT["/hello.txt"]
