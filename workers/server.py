"""`corral server`: the API under gunicorn with gthread workers."""

from __future__ import annotations

from typing import Any

from flask import Flask
from gunicorn.app.base import BaseApplication

from app.config import Settings


class ApiServer(BaseApplication):  # type: ignore[misc]
    """gunicorn embedded in our process, so the CLI owns its configuration."""

    def __init__(self, settings: Settings, database_url: str) -> None:
        self.settings = settings
        self.database_url = database_url
        super().__init__()

    def load_config(self) -> None:
        options: dict[str, Any] = {
            "bind": self.settings.bind,
            "workers": self.settings.http_workers,
            "worker_class": "gthread",
            # Blocking queries park a thread each for up to 5 minutes.
            "threads": self.settings.http_threads,
            "timeout": 60,
            "graceful_timeout": 10,
            "keepalive": 5,
            "accesslog": "-",
            "errorlog": "-",
            "loglevel": self.settings.log_level,
            "proc_name": "corral-server",
            "worker_tmp_dir": "/dev/shm",
        }
        if "control_socket_disable" in self.cfg.settings:
            # Several servers on one host would fight over the default socket path.
            options["control_socket_disable"] = True
        for key, value in options.items():
            self.cfg.set(key, value)

    def load(self) -> Flask:
        from app import create_app

        return create_app(self.settings, self.database_url)


def run_server(settings: Settings, database_url: str) -> None:
    ApiServer(settings, database_url).run()
