"""The group's network namespace when a bridge- or none-mode group has docker tasks (Nomad's
docker driver as DriverNetworkManager): a "pause" container, `nomad_init_<alloc id>`, started
from `infra_image` with docker's `none` network, owns the namespace; the client attaches it
under /var/run/netns (`ip netns attach`, by the pause process's PID), runs CNI on it as for any
bridge group, and the exec/raw_exec tasks join it by that path. The group's docker tasks run
with `network_mode = "container:nomad_init_<alloc id>"`.

Docker cannot join a namespace it did not make (no `--network ns:<path>`), so docker owns it
and everyone else joins: the order Nomad uses too.

No registry is reachable from many machines, so the default infra image is one the client
builds itself when the daemon lacks it: the host's static busybox (`busybox-static`) as the
image's only file, its command `busybox sleep`. Every other `infra_image` is pulled when absent
(within `infra_image_pull_timeout`)."""

from __future__ import annotations

import contextlib
import io
import shutil
import tarfile
from pathlib import Path

import docker
import docker.errors
from docker.utils import parse_repository_tag

from client.drivers.base import StartError
from client.drivers.docker_container import LABEL_ALLOC_DIR, LABEL_ALLOC_ID, PAUSE_PREFIX
from client.drivers.docker_daemon import DAEMON_ERRORS, connect

DEFAULT_INFRA_IMAGE = "corral/pause:busybox"  # built here when absent (Nomad's is registry.k8s.io/pause)
DEFAULT_PULL_TIMEOUT_S = 300.0  # Nomad's infra_image_pull_timeout: 5m
BUSYBOX_PATHS = (Path("/bin/busybox"), Path("/usr/bin/busybox"))
# PID 1 of the namespace: asleep for ~68 years; removed with SIGKILL (force), it needs no handler.
PAUSE_COMMAND = ["/busybox", "sleep", "2147483647"]
LABEL_PAUSE = "corral.pause"  # tells a pause container from a task's among the alloc's containers


def pause_name(alloc_id: str) -> str:
    return f"{PAUSE_PREFIX}{alloc_id}"


def busybox_binary() -> Path | None:
    found = shutil.which("busybox")
    candidates = (Path(found),) if found else ()
    return next((p for p in (*candidates, *BUSYBOX_PATHS) if p.is_file()), None)


def pause_rootfs(busybox: Path) -> bytes:
    """A tarball holding only the static busybox (it needs no library)."""
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        tar.add(str(busybox), arcname="busybox")
    return buffer.getvalue()


def ensure_image(client: docker.DockerClient, image: str, endpoint: str, pull_timeout_s: float) -> None:
    """The infra image present in the daemon: built from busybox for the default, else pulled."""
    try:
        client.images.get(image)
        return
    except docker.errors.ImageNotFound:
        pass
    if image == DEFAULT_INFRA_IMAGE:
        busybox = busybox_binary()
        if busybox is None:
            raise StartError(f"infra image {image} is absent and no busybox binary is installed to build it")
        repository, tag = parse_repository_tag(image)
        client.api.import_image_from_data(pause_rootfs(busybox), repository=repository, tag=tag)
        return
    repository, tag = parse_repository_tag(image)
    puller = connect(endpoint, timeout_s=pull_timeout_s)
    try:
        puller.images.pull(repository, tag=tag or "latest")
    except DAEMON_ERRORS as err:
        explanation = err.explanation if isinstance(err, docker.errors.APIError) else str(err)
        raise StartError(f"Failed to pull infra image `{image}`: {explanation}") from None
    finally:
        puller.close()


def start_pause(client: docker.DockerClient, image: str, alloc_id: str, alloc_dir: Path) -> int:
    """Start the allocation's pause container (or find it running, after a client restart);
    returns its process's PID on the host, whose namespace is the group's."""
    name = pause_name(alloc_id)
    with contextlib.suppress(docker.errors.NotFound):
        found = client.api.inspect_container(name)
        if found["State"].get("Running"):
            return int(found["State"]["Pid"])
        client.api.remove_container(name, force=True)  # stopped: its namespace is gone with it
    created = client.api.create_container(
        image,
        command=[*PAUSE_COMMAND] if image == DEFAULT_INFRA_IMAGE else None,  # others: the image's own
        name=name,
        labels={LABEL_ALLOC_ID: alloc_id, LABEL_ALLOC_DIR: str(alloc_dir), LABEL_PAUSE: "true"},
        host_config=client.api.create_host_config(network_mode="none", init=False),
    )
    client.api.start(created["Id"])
    pid = int(client.api.inspect_container(created["Id"])["State"].get("Pid") or 0)
    if pid <= 0:
        client.api.remove_container(created["Id"], force=True)
        raise StartError(f"pause container {name} did not keep running")
    return pid


def remove_pause(client: docker.DockerClient, alloc_id: str) -> None:
    """Remove the pause container (gone already: fine)."""
    with contextlib.suppress(docker.errors.NotFound):
        client.api.remove_container(pause_name(alloc_id), force=True)
