"""A task's `artifact` blocks, fetched before it starts (Nomad's artifact hook over go-getter):
http(s) sources, and file:// sources under the directories the client's configuration allows
(Nomad's client has no file getter at all); the go-getter `checksum` option verified; archives
unpacked unless `mode = "file"` or `archive = "false"`; destinations relative to the task
directory that stay inside the allocation directory."""

from __future__ import annotations

import bz2
import contextlib
import gzip
import hashlib
import lzma
import os
import shutil
import tarfile
import tempfile
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import httpx

from client.tasks.taskenv import interpolate

CHUNK = 1 << 16
TIMEOUT_S = 30.0  # connect and read (per chunk) timeout, Nomad's artifact http_read_timeout
HASHES: dict[str, Callable[[], Any]] = {
    "md5": hashlib.md5,
    "sha1": hashlib.sha1,
    "sha256": hashlib.sha256,
    "sha512": hashlib.sha512,
}
# go-getter's decompressors by suffix: tar archives first (".tar.gz" before ".gz").
TAR_SUFFIXES = (".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar.xz", ".txz", ".tar")
SINGLE_SUFFIXES: dict[str, Callable[[Path], IO[bytes] | gzip.GzipFile]] = {
    ".gz": gzip.GzipFile,
    ".bz2": bz2.BZ2File,
    ".xz": lzma.LZMAFile,
}
GETTER_OPTIONS = ("checksum", "archive")  # go-getter's own options; the rest go to the server


class ArtifactError(Exception):
    """The artifact could not be fetched, verified or unpacked; the message says why."""


@dataclass(frozen=True)
class Artifact:
    source: str
    destination: str = "local/"
    mode: str = "any"
    options: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, raw: Mapping[str, Any], env: Mapping[str, str], attrs: Mapping[str, str]) -> Artifact:
        """From the job's TaskArtifact, interpolated with the task's environment as Nomad does."""

        def fill(text: Any) -> str:
            return interpolate(str(text), env, attrs)

        return cls(
            source=fill(raw.get("GetterSource") or ""),
            destination=fill(raw.get("RelativeDest") or "local/"),
            mode=str(raw.get("GetterMode") or "any"),
            options={str(k): fill(v) for k, v in (raw.get("GetterOptions") or {}).items()},
            headers={str(k): fill(v) for k, v in (raw.get("GetterHeaders") or {}).items()},
        )


@dataclass(frozen=True)
class Fetcher:
    """Fetches one task's artifacts into its directory."""

    task_dir: Path
    alloc_dir: Path
    file_roots: Sequence[Path] = ()

    def fetch(self, artifact: Artifact) -> None:
        try:
            self._fetch(artifact)
        except ArtifactError as err:
            raise ArtifactError(f"failed to download artifact {artifact.source!r}: {err}") from None
        except (OSError, httpx.HTTPError, tarfile.TarError, zipfile.BadZipFile, EOFError, lzma.LZMAError) as err:
            raise ArtifactError(f"failed to download artifact {artifact.source!r}: {err}") from None

    def _fetch(self, artifact: Artifact) -> None:
        destination = self._destination(artifact.destination)
        parts = urlsplit(artifact.source)
        scheme = parts.scheme.lower() or ("file" if artifact.source.startswith("/") else "")
        if scheme not in ("http", "https", "file"):
            raise ArtifactError(f"download not supported for scheme {scheme or artifact.source!r}")
        name = Path(unquote(parts.path)).name or "index.html"
        staging = Path(tempfile.mkdtemp(prefix=".artifact-", dir=self.task_dir))
        try:
            downloaded = staging / name
            if scheme == "file":
                self._copy_local(Path(unquote(parts.path)), downloaded)
            else:
                _download(artifact, downloaded)
            checksum = artifact.options.get("checksum")
            if checksum:
                verify(downloaded, checksum)
            self._place(artifact, downloaded, destination)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _destination(self, relative: str) -> Path:
        """Relative to the task directory; it may reach the allocation's shared alloc/ (Nomad's
        `../alloc/data`) but never leave the allocation directory."""
        target = Path(os.path.normpath(self.task_dir / relative.lstrip("/")))
        if not target.is_relative_to(os.path.normpath(self.alloc_dir)):
            raise ArtifactError("artifact destination path escapes alloc directory")
        return target

    def _copy_local(self, source: Path, downloaded: Path) -> None:
        real = source.resolve()
        if not any(real.is_relative_to(root) for root in self.file_roots):
            raise ArtifactError("download not supported for scheme 'file' outside the client's artifact_file_roots")
        if not real.is_file():
            raise ArtifactError(f"{source} is not a file")
        shutil.copyfile(real, downloaded)

    def _place(self, artifact: Artifact, downloaded: Path, destination: Path) -> None:
        unpack = artifact.options.get("archive", "").lower() not in ("false", "0")
        kind = archive_kind(downloaded.name) if unpack and artifact.mode != "file" else None
        if artifact.mode == "file":
            destination.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(downloaded, destination)
        elif kind is not None:
            destination.mkdir(parents=True, exist_ok=True)
            unpack_into(downloaded, kind, destination)
        elif artifact.mode == "dir":
            raise ArtifactError('mode "dir" needs an archive (tar, tar.gz, tgz, tar.bz2, tar.xz, zip)')
        else:
            destination.mkdir(parents=True, exist_ok=True)
            shutil.move(downloaded, destination / downloaded.name)
        _no_escaping_links(destination, Path(os.path.normpath(self.alloc_dir)))


def _download(artifact: Artifact, downloaded: Path) -> None:
    parts = urlsplit(artifact.source)
    query = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in GETTER_OPTIONS]
    query += [(k, v) for k, v in artifact.options.items() if k not in GETTER_OPTIONS]
    url = urlunsplit((parts.scheme, parts.netloc, parts.path, urlencode(query), ""))
    headers = {"Accept-Encoding": "identity", **artifact.headers}
    with (
        # identity: the bytes as the server holds them, which is what a checksum is taken over
        httpx.stream("GET", url, headers=headers, timeout=TIMEOUT_S, follow_redirects=True) as answer,
        downloaded.open("wb") as out,
    ):
        if answer.status_code != 200:
            raise ArtifactError(f"bad response code: {answer.status_code}")
        for chunk in answer.iter_bytes(CHUNK):
            out.write(chunk)


def verify(path: Path, checksum: str) -> None:
    kind, _, expected = checksum.strip().partition(":")
    if kind not in HASHES or not expected:
        raise ArtifactError(f'checksum must be "type:value" with type md5, sha1, sha256 or sha512, got {checksum!r}')
    digest = HASHES[kind]()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(CHUNK), b""):
            digest.update(chunk)
    if digest.hexdigest() != expected.lower():
        raise ArtifactError(f"checksums did not match for {path.name}: expected {expected}, got {digest.hexdigest()}")


def archive_kind(name: str) -> str | None:
    lowered = name.lower()
    for suffix in (*TAR_SUFFIXES, ".zip", *SINGLE_SUFFIXES):
        if lowered.endswith(suffix):
            return suffix
    return None


def unpack_into(archive: Path, kind: str, destination: Path) -> None:
    """Unpack, refusing members that would land outside `destination` and links and devices."""
    if kind in TAR_SUFFIXES:
        with tarfile.open(archive, "r:*") as tar:  # the compression is read from the file
            for member in tar.getmembers():
                if not (member.isfile() or member.isdir()):
                    raise ArtifactError(f"archive member {member.name!r} is not a file or directory")
                _inside(destination, member.name)
            tar.extractall(destination, filter="data")
    elif kind == ".zip":
        with zipfile.ZipFile(archive) as zipped:
            for name in zipped.namelist():
                _inside(destination, name)
            zipped.extractall(destination)
    else:
        target = destination / archive.name[: -len(kind)]
        with SINGLE_SUFFIXES[kind](archive) as source, target.open("wb") as out:
            shutil.copyfileobj(source, out)


def _inside(destination: Path, name: str) -> None:
    target = Path(os.path.normpath(destination / name))
    if name.startswith("/") or not target.is_relative_to(os.path.normpath(destination)):
        raise ArtifactError(f"archive member {name!r} escapes the destination")


def _no_escaping_links(destination: Path, alloc_dir: Path) -> None:
    """Nothing placed may be a symlink leading out of the allocation (go-getter's sandbox check)."""
    paths = [destination, *destination.rglob("*")] if destination.is_dir() else [destination]
    for path in paths:
        if path.is_symlink() and not path.resolve().is_relative_to(alloc_dir.resolve()):
            with contextlib.suppress(OSError):
                path.unlink()
            raise ArtifactError("artifact includes symlink that resolves outside of sandbox")


@dataclass(frozen=True)
class TaskArtifacts:
    """A task's artifacts and where they go: fetched once, before its first start."""

    artifacts: tuple[Artifact, ...]
    fetcher: Fetcher

    def fetch_all(self) -> None:
        for artifact in self.artifacts:
            self.fetcher.fetch(artifact)
