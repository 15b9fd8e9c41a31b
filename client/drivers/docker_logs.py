"""A docker task's stdout and stderr, followed from the daemon into the task's log files (the
paths `log_paths` names, opened for appending), one thread per task. It ends when the
container stops (the daemon closes the stream) or the daemon goes away. After a client
restart it resumes from the log files' last write (`since`, whole seconds: a line written in
the same second as the last one before the restart may appear twice)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import docker
import structlog

from client.drivers.docker_daemon import DAEMON_ERRORS

log = structlog.get_logger(__name__)


def resume_since(stdout: Path, stderr: Path) -> int:
    """The second the log files were last written (0: from the beginning)."""
    times = [int(path.stat().st_mtime) for path in (stdout, stderr) if path.exists() and path.stat().st_size]
    return max(times, default=0)


class LogPump:
    """Two followers, one per stream: the Engine API's log stream says which stream a frame is
    from, but the SDK's reader drops that, so each stream is asked for on its own."""

    def __init__(self, client: docker.DockerClient, container_id: str, stdout: Path, stderr: Path, since: int) -> None:
        self._client, self._id, self._since = client, container_id, since
        self.threads = [
            threading.Thread(
                target=self._follow, args=(path, is_stdout), name=f"docker-logs-{container_id[:12]}", daemon=True
            )
            for path, is_stdout in ((stdout, True), (stderr, False))
        ]

    def start(self) -> None:
        for thread in self.threads:
            thread.start()

    def join(self, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _follow(self, path: Path, is_stdout: bool) -> None:
        try:
            with path.open("ab", buffering=0) as out:
                stream = self._client.api.logs(
                    self._id,
                    stdout=is_stdout,
                    stderr=not is_stdout,
                    stream=True,
                    follow=True,
                    since=self._since or None,
                )
                for chunk in stream:
                    out.write(chunk)
        except DAEMON_ERRORS as error:  # the daemon went away, the container was removed, a full disk
            log.info("docker log stream ended", container=self._id[:12], error=str(error))
