"""`docker`: the task as a container of the Docker daemon, driven through its Engine API (the
`docker` SDK). Config as Nomad's docker driver reads it (docker_config.py), the container as
Nomad creates it (docker_container.py), logs followed into the task's log files
(docker_logs.py). The exit is waited on by one thread per container; an OOM kill is reported
as Nomad does (exit code 137, exit message "OOM Killed"). The container is removed once its
exit has been recorded; a restarted client re-attaches by the container id it saved."""

from __future__ import annotations

import contextlib
import threading
from pathlib import Path
from typing import Any

import docker
import docker.errors
import structlog
from docker.models.containers import (  # type: ignore[attr-defined]  # the SDK's own, absent from types-docker
    _create_container_args as engine_create_args,
)
from docker.utils import parse_repository_tag

from client.drivers.base import (
    DEFAULT_KILL_SIGNAL,
    KILLED,
    ExitDetail,
    Handle,
    StartError,
    TaskSpec,
    log_paths,
    signal_number,
)
from client.drivers.docker_config import DockerConfig, parse
from client.drivers.docker_container import LABEL_ALLOC_DIR, LABEL_ALLOC_ID, create_kwargs
from client.drivers.docker_daemon import DAEMON_ERRORS, Daemon, connect, endpoint, probe
from client.drivers.docker_logs import LogPump, resume_since
from client.drivers.docker_pause import (
    DEFAULT_INFRA_IMAGE,
    DEFAULT_PULL_TIMEOUT_S,
    ensure_image,
    remove_pause,
    start_pause,
)

log = structlog.get_logger(__name__)
OOM_EXIT_CODE = 137  # what Nomad reports for an OOM-killed container
RETRY_S = 1.0  # between attempts to reach a daemon that went away while a task ran
LOG_DRAIN_S = 5.0  # how long the exit waits for the log stream to deliver the last lines
KILL_GRACE_S = 5.0
CONFLICT = 409  # the daemon's answer to a container name already in use


class DockerHandle:
    def __init__(self, client: docker.DockerClient, container_id: str, pid: int, pump: LogPump | None) -> None:
        self._client, self.container_id, self._pid, self._pump = client, container_id, pid, pump
        self._done = threading.Event()
        self._closed = threading.Event()
        self._code = KILLED
        self._detail = ExitDetail()
        self._waiter = threading.Thread(target=self._wait_exit, name=f"docker-wait-{container_id[:12]}", daemon=True)
        self._waiter.start()

    @property
    def client(self) -> docker.DockerClient:
        return self._client

    def state(self) -> dict[str, Any]:
        return {"container_id": self.container_id, "pid": self._pid}

    def _wait_exit(self) -> None:
        """Block on the daemon's wait until the container exits (retrying while the daemon is
        away); then read how it ended, let the log stream drain, and remove the container."""
        while not self._closed.is_set():
            try:
                self._client.api.wait(self.container_id, timeout=None)
                self._code, self._detail = exit_of(self._client.api.inspect_container(self.container_id))
                break
            except docker.errors.NotFound:
                break  # removed under us: nobody knows how it ended
            except DAEMON_ERRORS as err:
                log.warning(
                    "waiting on a docker container failed; retrying", container=self.container_id[:12], error=str(err)
                )
                self._closed.wait(RETRY_S)
        if self._pump is not None:
            self._pump.join(LOG_DRAIN_S)
        self._remove()
        self._done.set()

    def _remove(self) -> None:
        with contextlib.suppress(*DAEMON_ERRORS):
            self._client.api.remove_container(self.container_id, force=True)

    def wait(self, timeout_s: float) -> int | None:
        return self._code if self._done.wait(timeout_s) else None

    def exit_detail(self) -> ExitDetail:
        return self._detail

    def kill(self, timeout_s: float, signal_name: str = DEFAULT_KILL_SIGNAL) -> int:
        """The kill signal, then SIGKILL once kill_timeout has passed (Nomad's docker stop)."""
        try:
            signal_number(signal_name)
            name = signal_name.upper() if signal_name.upper().startswith("SIG") else f"SIG{signal_name.upper()}"
        except StartError:
            name = "SIGINT"  # as Nomad does with a signal name it does not know
        self._send(name)
        code = self.wait(timeout_s)
        if code is None:
            self._send("SIGKILL")
            code = self.wait(KILL_GRACE_S)
        if code is None:  # the daemon is away: stop waiting for it
            self._closed.set()
            return KILLED
        return code

    def _send(self, signal: str | int) -> None:
        with contextlib.suppress(*DAEMON_ERRORS):  # not running any more, or the daemon is away
            self._client.api.kill(self.container_id, signal=signal)

    def pids(self) -> list[int]:
        """The container's init process on the host (asked for once: usage is measured from it)."""
        if self._done.is_set():
            return []
        if not self._pid:
            with contextlib.suppress(*DAEMON_ERRORS):
                self._pid = int(self._client.api.inspect_container(self.container_id)["State"].get("Pid") or 0)
        return [self._pid] if self._pid else []

    def signal(self, signum: int) -> None:
        self._send(int(signum))


def exit_of(inspected: dict[str, Any]) -> tuple[int, ExitDetail]:
    """The exit code and detail from an inspected container (State.OOMKilled: Nomad's 137 and
    "OOM Killed", whatever code the kill left)."""
    state = inspected.get("State") or {}
    if state.get("OOMKilled"):
        return OOM_EXIT_CODE, ExitDetail(oom_killed=True, message="OOM Killed")
    code = int(state.get("ExitCode", KILLED))
    error = str(state.get("Error") or "")
    return code, ExitDetail(message=error)


class Docker:
    name = "docker"

    def __init__(
        self,
        docker_endpoint: str = "",
        volumes_enabled: bool = False,
        infra_image: str = DEFAULT_INFRA_IMAGE,
        infra_image_pull_timeout_s: float = DEFAULT_PULL_TIMEOUT_S,
    ) -> None:
        self.endpoint = endpoint(docker_endpoint)
        self.volumes_enabled = volumes_enabled
        self.infra_image = infra_image or DEFAULT_INFRA_IMAGE
        self.infra_image_pull_timeout_s = infra_image_pull_timeout_s
        self._client: docker.DockerClient | None = None
        self._lock = threading.Lock()

    def client(self) -> docker.DockerClient:
        """The daemon's client, made on first use (and again after the daemon was away)."""
        with self._lock:
            if self._client is None:
                try:
                    self._client = connect(self.endpoint)
                except DAEMON_ERRORS as err:
                    raise StartError(f"docker daemon at {self.endpoint} is not reachable: {err}") from None
            return self._client

    def probe(self) -> Daemon:
        return probe(self.endpoint)

    def fingerprint(self) -> dict[str, Any]:
        return self.probe().fingerprint()

    def start(self, task: TaskSpec, task_dir: Path, logs: Path) -> Handle:
        if task.alloc_dir is None:
            raise StartError("the docker driver needs the allocation's directory")
        config = parse(task.config, str(task_dir), str(task.alloc_dir), self.volumes_enabled)
        kwargs = create_kwargs(task, config)
        client = self.client()
        try:
            container_id = self._create(client, config, kwargs)
        except docker.errors.APIError as err:
            raise StartError(f"Failed to create container: {err.explanation or err}") from None
        except DAEMON_ERRORS as err:
            self._forget(client)
            raise StartError(f"docker daemon at {self.endpoint} is not reachable: {err}") from None
        stdout, stderr = log_paths(task, logs)
        try:
            client.api.start(container_id)
        except DAEMON_ERRORS as err:
            with contextlib.suppress(*DAEMON_ERRORS):
                client.api.remove_container(container_id, force=True)
            explanation = err.explanation if isinstance(err, docker.errors.APIError) else str(err)
            raise StartError(f"Failed to start container {container_id[:12]}: {explanation}") from None
        pump = LogPump(client, container_id, stdout, stderr, since=0)
        pump.start()
        return DockerHandle(client, container_id, 0, pump)

    def _create(self, client: docker.DockerClient, config: DockerConfig, kwargs: dict[str, Any]) -> str:
        """Create the container (its id), pulling the image first when asked to (force_pull) or
        when the daemon does not have it, and replacing a container of the same name that a
        client which died between create and record left behind. The common case is one request."""
        # containers.create's arguments as the Engine API's create takes them (the SDK's own
        # conversion, for the daemon's API version): one request, without the inspect the
        # SDK's containers.create adds to build a model nothing here reads.
        args = engine_create_args({**kwargs, "version": client.api.api_version})
        if config.force_pull:
            self._pull(config)
        try:
            return str(client.api.create_container(**args)["Id"])
        except docker.errors.ImageNotFound:
            self._pull(config)
        except docker.errors.APIError as err:
            if err.status_code != CONFLICT:
                raise
            client.api.remove_container(args["name"], force=True)
        return str(client.api.create_container(**args)["Id"])

    def _forget(self, client: docker.DockerClient) -> None:
        with self._lock:
            if self._client is client:
                self._client = None

    def _pull(self, config: DockerConfig) -> None:
        repository, tag = parse_repository_tag(config.image)
        auth = config.auth.as_sdk() if config.auth else None
        puller = connect(self.endpoint, timeout_s=config.image_pull_timeout_s)
        try:
            puller.images.pull(repository, tag=tag or "latest", auth_config=auth)
        except DAEMON_ERRORS as err:
            explanation = err.explanation if isinstance(err, docker.errors.APIError) else str(err)
            raise StartError(f"Failed to pull `{config.image}`: {explanation}") from None
        finally:
            puller.close()

    def reattach(self, task: TaskSpec, task_dir: Path, saved: dict[str, Any]) -> Handle | None:
        container_id = saved.get("container_id")
        if not isinstance(container_id, str) or not container_id:
            return None
        try:
            client = self.client()
            client.api.inspect_container(container_id)
        except (StartError, *DAEMON_ERRORS):
            return None  # gone (or the daemon is): the task runner starts it again
        stdout, stderr = log_paths(task, task_dir.parent / "alloc" / "logs")
        pump = LogPump(client, container_id, stdout, stderr, since=resume_since(stdout, stderr))
        pump.start()
        return DockerHandle(client, container_id, int(saved.get("pid") or 0), pump)

    def create_network(self, alloc_id: str, alloc_dir: Path) -> int:
        """The group's network namespace, owned by the allocation's pause container (Nomad's
        CreateNetwork): its PID on the host, whose /proc/<pid>/ns/net the client attaches."""
        client = self.client()
        try:
            ensure_image(client, self.infra_image, self.endpoint, self.infra_image_pull_timeout_s)
            return start_pause(client, self.infra_image, alloc_id, alloc_dir)
        except docker.errors.APIError as err:
            raise StartError(f"failed to create the pause container: {err.explanation or err}") from None
        except DAEMON_ERRORS as err:
            self._forget(client)
            raise StartError(f"docker daemon at {self.endpoint} is not reachable: {err}") from None

    def destroy_network(self, alloc_id: str) -> None:
        """Remove the allocation's pause container (Nomad's DestroyNetwork); the daemon being
        away leaves it to destroy_alloc and the sweep."""
        with contextlib.suppress(StartError, *DAEMON_ERRORS):
            remove_pause(self.client(), alloc_id)

    def destroy_alloc(self, alloc_id: str) -> int:
        """Remove every container of the allocation (any left after its tasks were killed, or
        of a task a previous client run lost track of); returns how many were removed."""
        return self._remove_where([f"{LABEL_ALLOC_ID}={alloc_id}"])

    def sweep(self, allocs_dir: Path, keep: set[str]) -> int:
        """Remove the containers of allocations of this client (under allocs_dir) that it no
        longer runs: lost when the client's state was lost, or left by a crash."""
        removed = 0
        try:
            containers = self.client().api.containers(all=True, filters={"label": [LABEL_ALLOC_ID]})
        except (StartError, *DAEMON_ERRORS):
            return 0
        for container in containers:
            labels = container.get("Labels") or {}
            alloc_dir = Path(str(labels.get(LABEL_ALLOC_DIR, "")))
            if alloc_dir.parent == allocs_dir and labels.get(LABEL_ALLOC_ID) not in keep:
                removed += self._remove_ids([str(container["Id"])])
        return removed

    def _remove_where(self, label_filters: list[str]) -> int:
        try:
            containers = self.client().api.containers(all=True, filters={"label": label_filters})
        except (StartError, *DAEMON_ERRORS):
            return 0
        return self._remove_ids([str(c["Id"]) for c in containers])

    def _remove_ids(self, ids: list[str]) -> int:
        removed = 0
        for container_id in ids:
            with contextlib.suppress(*DAEMON_ERRORS):
                self.client().api.remove_container(container_id, force=True)
                removed += 1
        return removed
