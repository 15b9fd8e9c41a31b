"""`corral server`: the API under gunicorn with gevent workers (workers.http_worker)."""

from __future__ import annotations

import math
import ssl
from pathlib import Path

from flask import Flask
from gunicorn.app.base import BaseApplication

from app.settings.config import Settings
from workers.http_worker import CorralWorker, exit_worker


class ApiServer(BaseApplication):  # type: ignore[misc]
    """gunicorn embedded in our process, so the CLI owns its configuration."""

    def __init__(self, settings: Settings, database_url: str) -> None:
        self.settings = settings
        self.database_url = database_url
        super().__init__()

    def load_config(self) -> None:
        options: dict[str, object] = {
            "bind": self.settings.bind,
            "backlog": listen_backlog(),
            "workers": self.settings.http_workers,
            # Evented: a blocking query parks a greenlet for up to 5 minutes, not a thread.
            "worker_class": CorralWorker,
            "worker_connections": self.settings.http_worker_connections,
            "timeout": 60,
            "graceful_timeout": math.ceil(self.settings.http_graceful_timeout_s),
            # On, so gunicorn reads every request's headers under CorralWorker.timeout_ctx.
            "keepalive": max(1, round(self.settings.http_header_timeout_s)),
            "accesslog": "-" if self.settings.http_access_log else None,
            "errorlog": "-",
            "loglevel": self.settings.log_level,
            "proc_name": "corral-server",
            "worker_tmp_dir": "/dev/shm",
            "worker_exit": exit_worker,
        }
        settings = self.settings
        if settings.tls_cert_file is not None:
            options["certfile"] = str(settings.tls_cert_file)
            options["keyfile"] = str(settings.tls_key_file)
            if settings.tls_ca_file is not None:
                options["ca_certs"] = str(settings.tls_ca_file)
            options["cert_reqs"] = ssl.CERT_REQUIRED if settings.tls_verify_client else ssl.CERT_NONE
        if "control_socket_disable" in self.cfg.settings:
            # Several servers on one host would fight over the default socket path.
            options["control_socket_disable"] = True
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        from app.api.factory import create_app

        return create_app(self.settings, self.database_url)


# Linux caps a listen queue at net.core.somaxconn; gunicorn's own default (2,048) sits below it
# on most hosts. Go's listeners, Nomad's among them, ask for the host's somaxconn.
SOMAXCONN = Path("/proc/sys/net/core/somaxconn")
DEFAULT_BACKLOG = 2048


def listen_backlog(source: Path = SOMAXCONN) -> int:
    """The longest listen queue the host allows: a fleet reconnecting at once after a restart or
    a wake storm queues its SYNs there while the workers' loops are busy, instead of having
    them dropped and retransmitted a second or more later."""
    try:
        return max(DEFAULT_BACKLOG, int(source.read_text().strip()))
    except (OSError, ValueError):
        return DEFAULT_BACKLOG


def run_server(settings: Settings, database_url: str) -> None:
    CorralWorker.settings = settings  # read by every worker after the fork
    ApiServer(settings, database_url).run()
