"""A private Docker daemon for the tests that run real containers, and a busybox image built
from the host's busybox-static (no registry is reachable from these machines).

The daemon has its own data root, exec root, pid file and socket under a temporary
directory, so it collides with no other daemon's state. It keeps docker's default bridge (port
mapping tests need it); two such daemons would fight over the bridge and iptables, so the
session holds an exclusive lock while its daemon runs. Stopped by its PID at the end, and
waited for: its data root stays mounted until it has exited."""

from __future__ import annotations

import contextlib
import fcntl
import io
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import docker
import pytest

IMAGE = "corral-busybox:latest"
BUSYBOX = Path("/bin/busybox")
LOCK = Path(tempfile.gettempdir()) / "corral-test-dockerd-bridge.lock"
READY_S = 60.0
STOP_S = 30.0
PASSWD = "root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n"
GROUP = "root:x:0:\nnogroup:x:65534:\n"


def dockerd_binary() -> str | None:
    return shutil.which("dockerd") or next(
        (p for p in ("/usr/sbin/dockerd", "/usr/bin/dockerd") if os.access(p, os.X_OK)), None
    )


@dataclass
class Dockerd:
    endpoint: str  # unix://… of the private daemon
    image: str
    pid: int
    root: Path

    def client(self) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.endpoint, version="auto", timeout=60)


def busybox_rootfs() -> bytes:
    """A tarball: /bin/busybox and a symlink per applet, /etc/passwd and /etc/group with
    nobody, an empty /tmp (docker import makes an image of it)."""
    applets = subprocess.run([str(BUSYBOX), "--list"], capture_output=True, text=True, check=True).stdout.split()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for directory in ("bin", "etc", "tmp", "root"):
            info = tarfile.TarInfo(directory)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if directory == "tmp" else 0o755
            tar.addfile(info)
        tar.add(str(BUSYBOX), arcname="bin/busybox")
        for applet in applets:
            if applet != "busybox":
                link = tarfile.TarInfo(f"bin/{applet}")
                link.type, link.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(link)
        for name, text in (("etc/passwd", PASSWD), ("etc/group", GROUP)):
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _ping(endpoint: str) -> bool:
    try:
        client = docker.APIClient(base_url=endpoint, version="auto", timeout=2)
    except docker.errors.DockerException:
        return False
    try:
        return bool(client.ping())
    except docker.errors.DockerException:
        return False
    finally:
        client.close()


def own_bridge(root: Path) -> str:
    """A bridge of the daemon's own (no port publishing through it): made here, deleted by stop."""
    name = f"crl{os.getpid() % 100000}{len(list(root.parent.glob('corral-dockerd-*'))) % 10}"
    subnet = f"10.213.{os.getpid() % 250}.1/24"
    for command in (
        ["ip", "link", "add", name, "type", "bridge"],
        ["ip", "addr", "add", subnet, "dev", name],
        ["ip", "link", "set", name, "up"],
    ):
        subprocess.run(command, check=True, capture_output=True)
    (root / "bridge").write_text(name)
    return name


def start(root: Path, bridge: bool = True) -> tuple[subprocess.Popen[bytes], str]:
    binary = dockerd_binary()
    assert binary is not None
    endpoint = f"unix://{root}/docker.sock"
    log = (root / "dockerd.log").open("wb")
    process = subprocess.Popen(
        [
            binary,
            "--data-root",
            str(root / "data"),
            "--exec-root",
            str(root / "exec"),
            "--pidfile",
            str(root / "docker.pid"),
            "-H",
            endpoint,
            # Without docker0 and iptables, so it collides with no other daemon. Not --bridge=none:
            # a daemon started so deletes docker0 under the daemon that owns it.
            *([] if bridge else ["--iptables=false", f"--bridge={own_bridge(root)}"]),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + READY_S
    while not _ping(endpoint):
        if process.poll() is not None or time.monotonic() > deadline:
            stop(process)
            raise RuntimeError(f"dockerd did not answer: {(root / 'dockerd.log').read_text()[-2000:]}")
        time.sleep(0.1)
    return process, endpoint


def stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the daemon by its PID, then wait for it to exit (SIGKILL if it will not)."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(STOP_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextlib.contextmanager
def private_dockerd(bridge: bool = True) -> Iterator[Dockerd]:
    """A daemon with the busybox image; with docker's default bridge (port mapping), or with
    `bridge` False a bridge of its own and no iptables (no port publishing, no lock)."""
    root = Path(tempfile.mkdtemp(prefix="corral-dockerd-", dir="/tmp"))
    with LOCK.open("w") as lock:
        if bridge:
            fcntl.flock(lock, fcntl.LOCK_EX)  # one bridge-owning daemon at a time on this machine
        process, endpoint = start(root, bridge)
        try:
            client = docker.DockerClient(base_url=endpoint, version="auto", timeout=60)
            client.api.import_image_from_data(busybox_rootfs(), repository=IMAGE.split(":")[0], tag="latest")
            client.close()
            yield Dockerd(endpoint, IMAGE, process.pid, root)
        finally:
            stop(process)
            if (root / "bridge").exists():
                subprocess.run(["ip", "link", "del", (root / "bridge").read_text()], check=False, capture_output=True)
            shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="session")
def dockerd() -> Iterator[Dockerd]:
    """The session's private daemon with the busybox image; skips only without dockerd."""
    if dockerd_binary() is None:
        pytest.skip("dockerd is not installed (apt-get install docker.io)")
    with private_dockerd() as daemon:
        yield daemon
